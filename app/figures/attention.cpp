#include "app/figures/attention.h"

#include "app/figures/palette.h"
#include "core/trace/keys.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {
std::string heads_label(const AttentionData& a, int head) {
  return head < 0 || head >= a.heads ? "mean over " + std::to_string(a.heads) + " heads" : "head " + std::to_string(head);
}
}  // namespace

viz::HeatmapSpec attention_map_spec(const AttentionData& a, int64_t segment, int li, int head, int64_t train_step) {
  viz::HeatmapSpec s;
  const float* m = a.map(li, head);
  if (!m) return s;
  s.title = a.kind + " attention, layer " + std::to_string(a.layers[static_cast<size_t>(li)]) + ", " +
            segment_title(segment, train_step) + " (" + heads_label(a, head) + ")";
  std::string keys = "key: ", queries = "query: ";
  for (size_t i = 0; i < a.col_blocks.size(); ++i) keys += (i ? " | " : "") + a.col_blocks[i].name;
  for (size_t i = 0; i < a.row_blocks.size(); ++i) queries += (i ? " | " : "") + a.row_blocks[i].name;
  s.x_label = keys;
  s.y_label = queries;
  s.colorbar_label = "attention weight";
  s.rows = a.rows;
  s.cols = a.cols;
  s.values.assign(m, m + static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols));
  s.row_labels = a.row_labels;
  s.col_labels = a.col_labels;
  s.vmin = 0.f;
  for (const auto& b : a.col_blocks) {
    if (b.count <= 0) continue;
    if (b.first > 0) s.col_separators.push_back(b.first);
    s.col_groups.push_back({b.first, b.name});
  }
  for (const auto& b : a.row_blocks)
    if (b.count > 0 && b.first > 0) s.row_separators.push_back(b.first);
  return s;
}

viz::BarSpec attention_mass_spec(const AttentionData& a, int64_t segment, int head, int64_t train_step) {
  viz::BarSpec s;
  for (size_t li = 0; li < a.layers.size(); ++li)
    for (size_t k = 0; k < a.mass_names.size(); ++k) {
      s.labels.push_back("L" + std::to_string(a.layers[li]) + " " + a.mass_names[k]);
      s.values.push_back(a.mass_at(static_cast<int>(li), head, static_cast<int>(k)));
      s.colors.push_back(palette::mass(static_cast<int>(k)));
    }
  s.title = a.kind + " block masses, " + segment_title(segment, train_step) + " (" + heads_label(a, head) + ")";
  std::string x;
  for (size_t k = 0; k < a.mass_names.size(); ++k) x += (k ? " | " : "") + a.mass_names[k];
  s.x_label = x;
  s.y_label = "attention mass";
  s.show_values = true;
  return s;
}

std::string attention_file_stem(const AttentionData& a) {
  if (a.source == keys::kRmtAttnPrefix) return "rmt_attention";
  // The decoder-only model (no cache, no memory) shares the key but is no Transformer-XL.
  if (a.source == keys::kTrxlAttnPrefix) return a.kind == "Transformer" ? "transformer_attention" : "trxl_attention";
  return "mtn_attention";
}

void set_weight_scale(viz::HeatmapSpec& s, float vmin, float vmax) {
  const bool given = std::isfinite(vmin) && std::isfinite(vmax) && vmax > vmin;
  if (given) {
    s.vmin = vmin;
    s.vmax = vmax;
  } else {
    float m = NAN;
    for (float x : s.values)
      if (std::isfinite(x)) m = std::isfinite(m) ? std::max(m, x) : x;
    s.vmin = 0.f;
    s.vmax = std::isfinite(m) && m > 0.f ? m : 1.f;
  }
  // In the title, which is never cut (a colour bar's label is cut to the bar's height).
  char range[96];
  std::snprintf(range, sizeof range, ", colour %.3g..%.3g%s", static_cast<double>(s.vmin), static_cast<double>(s.vmax),
                given ? "" : " (the map's largest)");
  s.title += range;
}

void write_attention_map(const AttentionData& a, int64_t segment, int li, int head, const std::string& base,
                         const FigureFormats& fm, std::vector<std::string>& out, float vmin, float vmax,
                         int64_t train_step) {
  if (a.empty()) return;
  viz::HeatmapSpec s = attention_map_spec(a, segment, li, head, train_step);
  set_weight_scale(s, vmin, vmax);
  write_heatmap(s, base, fm, out);
}

void write_attention_masses(const AttentionData& a, int64_t segment, int head, const std::string& base,
                            const FigureFormats& fm, std::vector<std::string>& out, int64_t train_step) {
  if (a.empty() || a.mass_names.empty()) return;
  write_figure(viz::make_bars(attention_mass_spec(a, segment, head, train_step)), base, fm, out);
  std::vector<std::string> header{"layer", "head"};
  for (const auto& n : a.mass_names) header.push_back(n);
  std::vector<std::vector<std::string>> rows;
  for (size_t l = 0; l < a.layers.size(); ++l)
    for (int h = -1; h < a.heads; ++h) {
      std::vector<std::string> row{std::to_string(a.layers[l]), h < 0 ? std::string("mean") : std::to_string(h)};
      for (size_t k = 0; k < a.mass_names.size(); ++k)
        row.push_back(viz::csv_number(a.mass_at(static_cast<int>(l), h, static_cast<int>(k))));
      rows.push_back(std::move(row));
    }
  write_table(base + ".csv", header, rows, fm, out);
}

}  // namespace mnemo::app
