#include "app/figures/memformer.h"

#include "app/figures/attention.h"
#include "app/figures/palette.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {
std::string heads_label(int head, int heads) {
  return head < 0 || head >= heads ? "mean over " + std::to_string(heads) + " heads" : "head " + std::to_string(head);
}
}  // namespace

viz::HeatmapSpec writer_attention_spec(const StepData& st, int head) {
  viz::HeatmapSpec s;
  const float* m = st.memformer.writer_block(head);
  if (!m) return s;
  s.title = "Memformer writer attention, " + segment_title(st) + " (" + heads_label(head, st.memformer.heads) + ")";
  s.x_label = "self | segment tokens" + std::string(st.memformer.n_cls > 0 ? " | cls" : "");
  s.y_label = "memory slot";
  s.colorbar_label = "attention weight";
  s.rows = st.memformer.slots;
  s.cols = st.memformer.cols;
  s.values.assign(m, m + static_cast<size_t>(st.memformer.slots) * static_cast<size_t>(st.memformer.cols));
  for (int i = 0; i < st.memformer.slots; ++i) s.row_labels.push_back(std::to_string(i));
  s.col_labels = st.memformer.col_labels;
  s.vmin = 0.f;
  s.col_separators = {1};
  if (st.memformer.n_cls > 0) s.col_separators.push_back(st.memformer.cols - st.memformer.n_cls);
  return s;
}

viz::BarSpec slot_types_spec(const StepData& st, const SlotThresholds& th) {
  std::vector<SlotType> types;
  for (float m : st.memformer.self_mass) types.push_back(classify_mass(m, th));
  const SlotTypeCounts c = count_slot_types(types);
  const double n = static_cast<double>(std::max<int64_t>(1, c.total()));
  auto pct = [&](int64_t v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * static_cast<double>(v) / n);
    return std::string(buf);
  };
  char sub[96];
  std::snprintf(sub, sizeof sub, " (%lld slots; retain >= %.2f, overwrite <= %.2f)", static_cast<long long>(c.total()),
                th.retain_min, th.overwrite_max);
  viz::BarSpec s;
  s.title = "Slot types, " + segment_title(st) + sub;
  s.x_label = "slot type (by self-attention mass)";
  s.y_label = "slots";
  s.labels = {"retain " + pct(c.retain), "mix " + pct(c.mix), "overwrite " + pct(c.overwrite)};
  s.values = {static_cast<float>(c.retain), static_cast<float>(c.mix), static_cast<float>(c.overwrite)};
  s.colors = {palette::kRetain, palette::kMix, palette::kOverwrite};
  return s;
}

viz::BarSpec forgetting_spec(const StepData& st) {
  viz::BarSpec s;
  s.title = "Forgetting-vector magnitude ||v_bias|| per slot";
  s.x_label = "memory slot";
  s.y_label = "||v_bias||";
  for (size_t i = 0; i < st.memformer.forget_norm.size(); ++i) {
    s.labels.push_back(std::to_string(i));
    s.values.push_back(st.memformer.forget_norm[i]);
  }
  s.show_values = st.memformer.forget_norm.size() <= 32;
  return s;
}

viz::HeatmapSpec memory_spec(const StepData& st) {
  viz::HeatmapSpec s;
  if (st.memformer.memory.empty() || st.memformer.dim <= 0) return s;
  s.title = "Memory after " + segment_title(st);
  s.x_label = "dimension";
  s.y_label = "memory slot";
  s.colorbar_label = "value";
  s.rows = static_cast<int>(st.memformer.memory.size() / static_cast<size_t>(st.memformer.dim));
  s.cols = st.memformer.dim;
  s.values = st.memformer.memory;
  s.cmap = viz::Colormap::Diverging;  // NaN range -> symmetric, white = 0
  for (int i = 0; i < s.rows; ++i) s.row_labels.push_back(std::to_string(i));
  for (int j = 0; j < s.cols; ++j) s.col_labels.push_back(std::to_string(j));
  return s;
}

viz::HeatmapSpec timeline_spec(const VisitedSegments& visited) {
  std::vector<int64_t> segs;
  int slots = 0;
  for (const auto& [seg, rec] : visited) {
    if (rec->self_mass.empty()) continue;
    if (!slots) slots = static_cast<int>(rec->self_mass.size());
    segs.push_back(seg);
  }
  viz::HeatmapSpec s;
  s.title = "Slot timeline: self-attention mass over visited segments";
  s.x_label = "visited segment";
  s.y_label = "memory slot";
  s.colorbar_label = "self mass";
  s.rows = slots;
  s.cols = static_cast<int>(segs.size());
  s.values.assign(static_cast<size_t>(s.rows) * segs.size(), NAN);
  size_t c = 0;
  for (const auto& [seg, rec] : visited) {
    if (rec->self_mass.empty()) continue;
    for (size_t i = 0; i < rec->self_mass.size() && i < static_cast<size_t>(slots); ++i)
      s.values[i * segs.size() + c] = rec->self_mass[i];
    ++c;
  }
  for (int i = 0; i < s.rows; ++i) s.row_labels.push_back(std::to_string(i));
  for (int64_t g : segs) s.col_labels.push_back(std::to_string(g));
  s.vmin = 0.f;
  s.vmax = 1.f;
  return s;
}

viz::LineSpec token_loss_spec(const VisitedSegments& visited) {
  viz::LineSpec s;
  s.title = "Loss per token (cross-entropy of predicting it)";
  s.x_label = "document token";
  s.y_label = "loss (nats)";
  viz::LineSeries ser;
  ser.name = "token loss";
  for (const auto& [seg, rec] : visited)
    for (size_t j = 0; j < rec->token_losses.values.size(); ++j) {
      ser.x.push_back(static_cast<float>(rec->token_losses.first + static_cast<int64_t>(j)));
      ser.y.push_back(rec->token_losses.values[j]);
    }
  if (!ser.x.empty()) s.series.push_back(std::move(ser));
  return s;
}

void write_writer_attention(const StepData& st, int head, int highlight, const std::string& base, const FigureFormats& fm,
                            std::vector<std::string>& out, float vmin, float vmax) {
  if (!st.memformer.has_writer()) return;
  viz::HeatmapSpec spec = writer_attention_spec(st, head);
  set_weight_scale(spec, vmin, vmax);
  if (highlight >= 0 && highlight < spec.rows) spec.highlight_row = highlight;
  write_heatmap(spec, base, fm, out);
}

void write_slot_types(const StepData& st, const SlotThresholds& th, const std::string& base, const FigureFormats& fm,
                      std::vector<std::string>& out) {
  if (!st.memformer.has_writer()) return;
  write_figure(viz::make_bars(slot_types_spec(st, th)), base, fm, out);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < st.memformer.self_mass.size(); ++i)
    rows.push_back({std::to_string(i), slot_type_name(classify_mass(st.memformer.self_mass[i], th)),
                    viz::csv_number(st.memformer.self_mass[i])});
  write_table(base + ".csv", {"slot", "type", "self_mass"}, rows, fm, out);
}

void write_forgetting(const StepData& st, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  if (st.memformer.forget_norm.empty()) return;
  const viz::BarSpec spec = forgetting_spec(st);
  write_figure(viz::make_bars(spec), base, fm, out);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < spec.values.size(); ++i) rows.push_back({spec.labels[i], viz::csv_number(spec.values[i])});
  write_table(base + ".csv", {"slot", "v_bias_norm"}, rows, fm, out);
}

void write_memory(const StepData& st, int highlight, const std::string& base, const FigureFormats& fm,
                  std::vector<std::string>& out) {
  viz::HeatmapSpec spec = memory_spec(st);
  if (spec.rows <= 0 || spec.cols <= 0) return;
  if (highlight >= 0 && highlight < spec.rows) spec.highlight_row = highlight;
  write_heatmap(spec, base, fm, out);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < st.memformer.slot_norm.size(); ++i) {
    const float c = i < st.memformer.cos_prev.size() ? st.memformer.cos_prev[i] : NAN;
    rows.push_back(
        {std::to_string(i), viz::csv_number(st.memformer.slot_norm[i]), viz::csv_number(c), viz::csv_number(1.f - c)});
  }
  write_table(base + "_slots.csv", {"slot", "norm", "cos_prev", "drift"}, rows, fm, out);
}

void write_timeline(const VisitedSegments& visited, int highlight, const std::string& base, const FigureFormats& fm,
                    std::vector<std::string>& out) {
  viz::HeatmapSpec spec = timeline_spec(visited);
  if (spec.rows <= 0 || spec.cols <= 0) return;
  if (highlight >= 0 && highlight < spec.rows) spec.highlight_row = highlight;
  write_heatmap(spec, base, fm, out);
}

void write_token_losses(const VisitedSegments& visited, const Document& doc, int64_t segment_len, const std::string& base,
                        const FigureFormats& fm, std::vector<std::string>& out) {
  const viz::LineSpec spec = token_loss_spec(visited);
  if (!spec.series.empty()) write_figure(viz::make_lines(spec), base + "_loss", fm, out);
  // One row per token of every visited segment: its loss and the segment whose step
  // predicted it (empty when no visited step did).
  std::vector<std::vector<std::string>> rows;
  for (const auto& [seg, rec] : visited) {
    for (int64_t t = seg * segment_len; t < std::min(doc.size(), (seg + 1) * segment_len); ++t) {
      const TokenLossAt l = token_loss_at(visited, segment_len, t);
      rows.push_back({std::to_string(t), std::to_string(seg), std::to_string(doc.id(t)), token_text(doc, t),
                      l.segment < 0 ? "" : viz::csv_number(l.loss), l.segment < 0 ? "" : std::to_string(l.segment)});
    }
  }
  write_table(base + "_tokens.csv", {"token", "segment", "id", "text", "loss", "predicted_at_segment"}, rows, fm, out);
}

}  // namespace mnemo::app
