#include "app/figures.h"

#include "app/cli.h"
#include "app/figures_hash.h"
#include "app/figures_mtn.h"
#include "app/figures_rmt.h"
#include "core/trace/analysis.h"
#include "viz/export.h"

#include <cstdio>
#include <sstream>

namespace mnemo::app {

FigureFormats parse_formats(const std::string& list) {
  FigureFormats f;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "png") f.png = true;
    else if (item == "svg") f.svg = true;
    else if (item == "csv") f.csv = true;
    else throw UsageError("--format: unknown format '" + item + "'; use a comma list of png, svg, csv");
  }
  if (!f.png && !f.svg && !f.csv) throw UsageError("--format: no format given; use a comma list of png, svg, csv");
  return f;
}

std::string token_text(const Document& doc, int64_t t) {
  const auto& [b, e] = doc.offsets.at(static_cast<size_t>(t));
  return viz::token_label(std::string_view(doc.bytes).substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
}

viz::HeatmapSpec writer_attention_spec(const Snapshot& snap, const Document& doc, int head) {
  const auto& attn = snap.trace.at(keys::kWriterAttn);  // [B, H, k, 1 + L + C]
  const int64_t nheads = attn.size(1), k = attn.size(2), cols_all = attn.size(3);
  TORCH_CHECK(head >= -1 && head < nheads, "head ", head, " out of range");
  auto m = head < 0 ? attn[0].mean(0) : attn[0][head];  // [k, 1 + L + C]
  // L = the segment length the model was given (padded); C = cls columns after it.
  const int64_t l_padded = snap.trace.has(keys::kInputTokens) ? snap.trace.at(keys::kInputTokens).size(1) : snap.length;
  const int64_t n_cls = cols_all - 1 - l_padded;
  std::vector<int64_t> keep{0};
  for (int64_t j = 0; j < snap.length; ++j) keep.push_back(1 + j);
  for (int64_t c = 0; c < n_cls; ++c) keep.push_back(1 + l_padded + c);
  auto sel = m.index_select(1, torch::tensor(keep, torch::kInt64)).contiguous().to(torch::kFloat32);

  viz::HeatmapSpec s;
  std::ostringstream title;
  title << "Memformer writer attention, segment " << snap.segment << " ("
        << (head < 0 ? "mean over " + std::to_string(nheads) + " heads" : "head " + std::to_string(head)) << ")";
  s.title = title.str();
  s.x_label = "self | segment tokens" + std::string(n_cls > 0 ? " | cls" : "");
  s.y_label = "memory slot";
  s.colorbar_label = "attention weight";
  s.rows = static_cast<int>(k);
  s.cols = static_cast<int>(keep.size());
  s.values.assign(sel.data_ptr<float>(), sel.data_ptr<float>() + sel.numel());
  for (int64_t i = 0; i < k; ++i) s.row_labels.push_back(std::to_string(i));
  s.col_labels.push_back("self");
  for (int64_t j = 0; j < snap.length; ++j) s.col_labels.push_back(token_text(doc, snap.first_token + j));
  for (int64_t c = 0; c < n_cls; ++c) s.col_labels.push_back(n_cls == 1 ? "<cls>" : "<cls" + std::to_string(c) + ">");
  // 0 to the map's maximum: an untrained writer is near-uniform (~1/(1+L+C)), which a fixed
  // 0..1 scale would show as one flat colour. The colorbar states the range.
  s.vmin = 0.f;
  s.col_separators = {1};
  if (n_cls > 0) s.col_separators.push_back(static_cast<int>(1 + snap.length));
  return s;
}

viz::BarSpec slot_types_spec(const Snapshot& snap) {
  auto c = count_slot_types(snap.trace.at(keys::kSlotType));
  const double n = static_cast<double>(std::max<int64_t>(1, c.total()));
  auto pct = [&](int64_t v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * static_cast<double>(v) / n);
    return std::string(buf);
  };
  viz::BarSpec s;
  s.title = "Slot types, segment " + std::to_string(snap.segment) + " (" + std::to_string(c.total()) + " slots)";
  s.x_label = "slot type (by self-attention mass)";
  s.y_label = "slots";
  s.labels = {"retain " + pct(c.retain), "mix " + pct(c.mix), "overwrite " + pct(c.overwrite)};
  s.values = {static_cast<float>(c.retain), static_cast<float>(c.mix), static_cast<float>(c.overwrite)};
  s.colors = {viz::Rgb{44, 123, 182}, viz::Rgb{171, 171, 171}, viz::Rgb{215, 48, 39}};
  return s;
}

viz::BarSpec forgetting_spec(const Snapshot& snap) {
  auto f = snap.trace.at(keys::kForgetNorm).to(torch::kFloat32).contiguous();
  viz::BarSpec s;
  s.title = "Forgetting-vector magnitude ||v_bias|| per slot";
  s.x_label = "memory slot";
  s.y_label = "||v_bias||";
  for (int64_t i = 0; i < f.numel(); ++i) {
    s.labels.push_back(std::to_string(i));
    s.values.push_back(f.data_ptr<float>()[i]);
  }
  s.show_values = f.numel() <= 32;
  return s;
}

namespace {
void emit(const viz::Figure& fig, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  if (fm.png) {
    viz::write_png(fig, base + ".png", 2.0f);
    out.push_back(base + ".png");
  }
  if (fm.svg) {
    viz::write_svg(fig, base + ".svg");
    out.push_back(base + ".svg");
  }
}
}  // namespace

std::vector<std::string> write_step_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                            const FigureFormats& fm) {
  std::vector<std::string> out;
  if (snap.trace.has(keys::kWriterAttn)) {
    const int nheads = static_cast<int>(snap.trace.at(keys::kWriterAttn).size(1));
    for (int h = -1; h < nheads; ++h) {
      auto spec = writer_attention_spec(snap, doc, h);
      const std::string base = dir + "/writer_attention_" + (h < 0 ? std::string("mean") : "head" + std::to_string(h));
      emit(viz::make_heatmap(spec), base, fm, out);
      if (fm.csv) {
        viz::write_csv_matrix(base + ".csv", spec.rows, spec.cols, spec.values, spec.row_labels, spec.col_labels);
        out.push_back(base + ".csv");
      }
    }
  }
  if (snap.trace.has(keys::kSlotType)) {
    emit(viz::make_bars(slot_types_spec(snap)), dir + "/slot_types", fm, out);
    if (fm.csv) {
      auto types = snap.trace.at(keys::kSlotType)[0].to(torch::kInt64);
      torch::Tensor mass;
      if (snap.trace.has(keys::kWriterAttn)) mass = writer_self_mass(snap.trace.at(keys::kWriterAttn))[0];
      std::vector<std::vector<std::string>> rows;
      for (int64_t i = 0; i < types.size(0); ++i) {
        rows.push_back({std::to_string(i), slot_type_name(static_cast<SlotType>(types[i].item<int64_t>())),
                        mass.defined() ? std::to_string(mass[i].item<float>()) : ""});
      }
      viz::write_csv_table(dir + "/slot_types.csv", {"slot", "type", "self_mass"}, rows);
      out.push_back(dir + "/slot_types.csv");
    }
  }
  if (snap.trace.has(keys::kForgetNorm)) {
    auto spec = forgetting_spec(snap);
    emit(viz::make_bars(spec), dir + "/forgetting", fm, out);
    if (fm.csv) {
      std::vector<std::vector<std::string>> rows;
      for (size_t i = 0; i < spec.values.size(); ++i) rows.push_back({spec.labels[i], std::to_string(spec.values[i])});
      viz::write_csv_table(dir + "/forgetting.csv", {"slot", "v_bias_norm"}, rows);
      out.push_back(dir + "/forgetting.csv");
    }
  }
  // MemoryFormer hash tables ("linear": "hashed"): loads, one table's bars, p(z), stats.
  auto hash_files = write_hash_figures(snap.trace, dir, fm, "segment " + std::to_string(snap.segment));
  out.insert(out.end(), hash_files.begin(), hash_files.end());
  // Memory Transformer Network family: kept tokens, importance, document view, joint attention.
  auto mtn_files = write_mtn_figures(snap, doc, dir, fm);
  out.insert(out.end(), mtn_files.begin(), mtn_files.end());
  // RMT / Transformer-XL family: attention maps with memory blocks, block masses, cache attention.
  auto rmt_files = write_rmt_figures(snap, doc, dir, fm);
  out.insert(out.end(), rmt_files.begin(), rmt_files.end());
  return out;
}

}  // namespace mnemo::app
