#include "app/figures/provenance.h"

#include "app/figures/palette.h"

#include <algorithm>
#include <cstdio>

namespace mnemo::app {

namespace {
std::string percent(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * v);
  return buf;
}
}  // namespace

viz::HeatmapSpec provenance_map_spec(const ProvenanceState& p, int slot, int64_t segment_len, int64_t doc_size) {
  viz::HeatmapSpec s;
  if (slot < 0 || slot >= p.slots || segment_len <= 0) return s;
  const int64_t n = std::min<int64_t>(p.tokens, doc_size);
  const int64_t segs = std::max<int64_t>(1, (n + segment_len - 1) / segment_len);
  s.title = "Provenance of memory entry " + std::to_string(slot) + " after segment " + std::to_string(p.segment) +
            " (initial memory " + percent(p.initial[slot]) +
            (p.other[slot] > 0.0005f ? ", other inputs " + percent(p.other[slot]) : std::string()) + ")";
  s.x_label = "position in segment";
  s.y_label = "segment";
  s.colorbar_label = "share of the entry";
  s.rows = static_cast<int>(segs);
  s.cols = static_cast<int>(segment_len);
  s.values.assign(static_cast<size_t>(s.rows) * s.cols, NAN);
  for (int64_t t = 0; t < n; ++t) s.values[static_cast<size_t>(t)] = p.at(slot, t);
  for (int64_t r = 0; r < segs; ++r) s.row_labels.push_back(std::to_string(r));
  for (int64_t c = 0; c < segment_len; ++c) s.col_labels.push_back(std::to_string(c));
  s.vmin = 0.f;
  s.vmax = std::max(p.row_max(slot), 1e-6f);
  s.cmap = viz::Colormap::Viridis;
  return s;
}

viz::BarSpec provenance_top_spec(const ProvenanceState& p, int slot, const Document& doc, int top) {
  viz::BarSpec b;
  if (slot < 0 || slot >= p.slots) return b;
  b.title = "Largest sources of memory entry " + std::to_string(slot) + " after segment " + std::to_string(p.segment);
  b.x_label = "source";
  b.y_label = "share of the entry";
  b.horizontal = true;
  // The state keeps top_k; more are taken from the full row.
  std::vector<std::pair<float, int64_t>> w;
  for (int64_t t = 0; t < p.tokens; ++t)
    if (p.at(slot, t) > 0.f) w.emplace_back(p.at(slot, t), t);
  const size_t k = std::min<size_t>(static_cast<size_t>(std::max(0, top)), w.size());
  std::partial_sort(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), w.end(),
                    [](const auto& a, const auto& c) { return a.first > c.first || (a.first == c.first && a.second < c.second); });
  for (size_t i = 0; i < k; ++i) {
    b.labels.push_back("#" + std::to_string(w[i].second) + " '" + token_text(doc, w[i].second) + "'");
    b.values.push_back(w[i].first);
    b.colors.push_back(palette::series(0));
  }
  b.labels.push_back("initial memory");
  b.values.push_back(p.initial[slot]);
  b.colors.push_back(palette::kMuted);
  if (p.other[slot] > 0.f) {
    b.labels.push_back("other inputs");
    b.values.push_back(p.other[slot]);
    b.colors.push_back(palette::kMix);
  }
  return b;
}

void write_provenance(const ProvenanceState& p, int slot, const Document& doc, int64_t segment_len,
                      const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  if (slot < 0 || slot >= p.slots) return;
  const viz::HeatmapSpec map = provenance_map_spec(p, slot, segment_len, doc.size());
  if (map.rows > 0 && map.cols > 0) write_heatmap(map, base + "_map", fm, out);
  write_figure(viz::make_bars(provenance_top_spec(p, slot, doc)), base + "_top", FigureFormats{fm.png, fm.svg, false, fm.stamp}, out);
  std::vector<std::vector<std::string>> rows;
  const int64_t n = std::min<int64_t>(p.tokens, doc.size());
  for (int64_t t = 0; t < n; ++t) {
    const float v = p.at(slot, t);
    if (v <= 0.f) continue;
    rows.push_back({std::to_string(t), std::to_string(t / std::max<int64_t>(1, segment_len)),
                    std::to_string(t % std::max<int64_t>(1, segment_len)), token_text(doc, t), viz::csv_number(v)});
  }
  rows.push_back({"initial", "", "", "", viz::csv_number(p.initial[slot])});
  rows.push_back({"other", "", "", "", viz::csv_number(p.other[slot])});
  write_table(base + ".csv", {"token", "segment", "position", "text", "share"}, rows, fm, out);
}

void write_slot_holdings(const VisitedSegments& visited, int slot, const Document& doc, const std::string& base,
                         const FigureFormats& fm, std::vector<std::string>& out) {
  if (slot < 0) return;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [seg, rec] : visited) {
    if (rec->prov_top_k <= 0 || static_cast<size_t>(slot + 1) * rec->prov_top_k > rec->prov_top.size()) continue;
    const std::string init = static_cast<size_t>(slot) < rec->prov_initial.size() ? viz::csv_number(rec->prov_initial[slot]) : "";
    for (int k = 0; k < rec->prov_top_k; ++k) {
      const ProvenanceSource& s = rec->prov_top[static_cast<size_t>(slot) * rec->prov_top_k + k];
      if (s.token < 0) break;
      rows.push_back({std::to_string(seg), std::to_string(k + 1), std::to_string(s.token), token_text(doc, s.token),
                      viz::csv_number(s.weight), init});
    }
  }
  if (rows.empty()) return;
  write_table(base + ".csv", {"segment", "rank", "token", "text", "share", "initial"}, rows, fm, out);
}

}  // namespace mnemo::app
