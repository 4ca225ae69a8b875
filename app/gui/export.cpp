#include "app/gui/export.h"

#include "app/figures_session.h"

#include "app/cli_common.h"
#include "app/figures.h"
#include "app/figures_hash.h"
#include "app/figures_mtn.h"
#include "app/figures_rmt.h"
#include "app/view_model.h"
#include "core/models/mtn.h"
#include "core/models/rmt.h"
#include "core/trace/analysis.h"
#include "viz/export.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

viz::BarSpec slot_types_spec(const Snapshot& snap, const SlotThresholds& th) {
  auto types = classify_slots(snap.trace.at(keys::kWriterAttn), th);
  auto c = count_slot_types(types);
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
  s.title = "Slot types, segment " + std::to_string(snap.segment) + sub;
  s.x_label = "slot type (by self-attention mass)";
  s.y_label = "slots";
  s.labels = {"retain " + pct(c.retain), "mix " + pct(c.mix), "overwrite " + pct(c.overwrite)};
  s.values = {static_cast<float>(c.retain), static_cast<float>(c.mix), static_cast<float>(c.overwrite)};
  s.colors = {viz::Rgb{44, 123, 182}, viz::Rgb{171, 171, 171}, viz::Rgb{215, 48, 39}};
  return s;
}

viz::HeatmapSpec memory_spec(const Snapshot& snap) {
  auto m = snap.trace.at(keys::kMemory)[0].to(torch::kFloat32).contiguous();  // [k, d]
  viz::HeatmapSpec s;
  s.title = "Memory after segment " + std::to_string(snap.segment);
  s.x_label = "dimension";
  s.y_label = "memory slot";
  s.colorbar_label = "value";
  s.rows = static_cast<int>(m.size(0));
  s.cols = static_cast<int>(m.size(1));
  s.values.assign(m.data_ptr<float>(), m.data_ptr<float>() + m.numel());
  s.cmap = viz::Colormap::Diverging;  // NaN range -> symmetric, white = 0
  for (int i = 0; i < s.rows; ++i) s.row_labels.push_back(std::to_string(i));
  for (int j = 0; j < s.cols; ++j) s.col_labels.push_back(std::to_string(j));
  return s;
}

viz::HeatmapSpec timeline_spec(const SessionView& v) {
  std::vector<int64_t> segs;
  int slots = 0;
  for (const auto& [seg, rec] : v.visited) {
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
  for (const auto& [seg, rec] : v.visited) {
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

viz::LineSpec token_loss_spec(const SessionView& v) {
  viz::LineSpec s;
  s.title = "Loss per token (predicted by the step of the segment before)";
  s.x_label = "document token";
  s.y_label = "loss (nats)";
  viz::LineSeries ser;
  ser.name = "token loss";
  if (v.info) {
    const int64_t L = v.info->segment_len;
    for (const auto& [seg, rec] : v.visited)
      for (size_t j = 0; j < rec->next_loss.size(); ++j) {
        ser.x.push_back(static_cast<float>((seg + 1) * L + static_cast<int64_t>(j)));
        ser.y.push_back(rec->next_loss[j]);
      }
  }
  if (!ser.x.empty()) s.series.push_back(std::move(ser));
  return s;
}

viz::HeatmapSpec attention_map_spec(const StepData& st, int li, int head) {
  const AttentionData& a = st.attention;
  viz::HeatmapSpec s;
  const float* m = a.map(li, head);
  if (!m) return s;
  s.title = a.kind + " attention, layer " + std::to_string(a.layers[static_cast<size_t>(li)]) + ", segment " +
            std::to_string(st.segment) + " (" +
            (head < 0 || head >= a.heads ? "mean over " + std::to_string(a.heads) + " heads" : "head " + std::to_string(head)) + ")";
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

viz::BarSpec attention_mass_spec(const StepData& st, int head) {
  const AttentionData& a = st.attention;
  viz::BarSpec s;
  const std::vector<viz::Rgb> colors = {{44, 123, 182}, {215, 48, 39}, {253, 174, 97}};
  for (size_t li = 0; li < a.layers.size(); ++li)
    for (size_t k = 0; k < a.mass_names.size(); ++k) {
      s.labels.push_back("L" + std::to_string(a.layers[li]) + " " + a.mass_names[k]);
      s.values.push_back(a.mass_at(static_cast<int>(li), head, static_cast<int>(k)));
      s.colors.push_back(colors[k % colors.size()]);
    }
  s.title = a.kind + " block masses, segment " + std::to_string(st.segment) + " (" +
            (head < 0 || head >= a.heads ? "mean over " + std::to_string(a.heads) + " heads" : "head " + std::to_string(head)) + ")";
  std::string x;
  for (size_t k = 0; k < a.mass_names.size(); ++k) x += (k ? " | " : "") + a.mass_names[k];
  s.x_label = x;
  s.y_label = "attention mass";
  s.show_values = true;
  return s;
}

std::string default_export_dir(const SessionView& s) {
  std::string dir = ".";
  if (s.info && s.info->doc && !s.info->doc->path.empty()) {
    const std::string& p = s.info->doc->path;
    const auto slash = p.find_last_of('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
  }
  return dir + "/mnemoscope-export";
}

namespace {

void figure(const viz::Figure& fig, const std::string& base, std::vector<std::string>& out) {
  viz::write_png(fig, base + ".png", 2.0f);
  out.push_back(base + ".png");
  viz::write_svg(fig, base + ".svg");
  out.push_back(base + ".svg");
}

void heatmap(viz::HeatmapSpec spec, const std::string& base, int selected, std::vector<std::string>& out) {
  if (spec.rows <= 0 || spec.cols <= 0) return;
  if (selected >= 0 && selected < spec.rows) spec.highlight_row = selected;
  figure(viz::make_heatmap(spec), base, out);
  viz::write_csv_matrix(base + ".csv", spec.rows, spec.cols, spec.values, spec.row_labels, spec.col_labels);
  out.push_back(base + ".csv");
}

std::string fmt(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

void export_one(PanelId id, const ExportRequest& r, const std::string& prefix, std::vector<std::string>& out) {
  const SessionView& v = *r.session;
  const Snapshot& snap = *v.step->snap;
  const Document& doc = *v.info->doc;
  const std::string base = prefix + panel_file_name(id);
  switch (id) {
    case PanelId::kDocument: {
      auto spec = token_loss_spec(v);
      if (!spec.series.empty()) figure(viz::make_lines(spec), base + "_loss", out);
      std::vector<std::vector<std::string>> rows;
      const int64_t L = v.info->segment_len;
      for (const auto& [seg, rec] : v.visited) {
        for (int64_t t = seg * L; t < std::min(doc.size(), (seg + 1) * L); ++t) {
          const float loss = v.token_loss(t);
          rows.push_back({std::to_string(t), std::to_string(seg), std::to_string(doc.ids[static_cast<size_t>(t)]),
                          token_text(doc, t), std::isnan(loss) ? "" : fmt(loss)});
        }
      }
      viz::write_csv_table(base + "_tokens.csv", {"token", "segment", "id", "text", "loss"}, rows);
      out.push_back(base + "_tokens.csv");
      break;
    }
    case PanelId::kWriterAttention:
      if (snap.trace.has(keys::kWriterAttn))
        heatmap(writer_attention_spec(snap, doc, r.head), base + (r.head < 0 ? "_mean" : "_head" + std::to_string(r.head)),
                r.selected_slot, out);
      break;
    case PanelId::kSlotTypes:
      if (snap.trace.has(keys::kWriterAttn)) {
        figure(viz::make_bars(slot_types_spec(snap, r.thresholds)), base, out);
        const auto& mass = v.step->self_mass;
        std::vector<std::vector<std::string>> rows;
        for (size_t i = 0; i < mass.size(); ++i)
          rows.push_back({std::to_string(i), slot_type_name(classify_mass(mass[i], r.thresholds)), fmt(mass[i])});
        viz::write_csv_table(base + ".csv", {"slot", "type", "self_mass"}, rows);
        out.push_back(base + ".csv");
      }
      break;
    case PanelId::kForgetting:
      if (snap.trace.has(keys::kForgetNorm)) {
        auto spec = forgetting_spec(snap);
        figure(viz::make_bars(spec), base, out);
        std::vector<std::vector<std::string>> rows;
        for (size_t i = 0; i < spec.values.size(); ++i) rows.push_back({spec.labels[i], fmt(spec.values[i])});
        viz::write_csv_table(base + ".csv", {"slot", "v_bias_norm"}, rows);
        out.push_back(base + ".csv");
      }
      break;
    case PanelId::kMemory:
      if (snap.trace.has(keys::kMemory)) {
        heatmap(memory_spec(snap), base, r.selected_slot, out);
        std::vector<std::vector<std::string>> rows;
        const auto& st = *v.step;
        for (size_t i = 0; i < st.slot_norm.size(); ++i) {
          const float c = i < st.cos_prev.size() ? st.cos_prev[i] : NAN;
          rows.push_back({std::to_string(i), fmt(st.slot_norm[i]), fmt(c), fmt(1.f - c)});
        }
        viz::write_csv_table(base + "_slots.csv", {"slot", "norm", "cos_prev", "drift"}, rows);
        out.push_back(base + "_slots.csv");
      }
      break;
    case PanelId::kTimeline:
      heatmap(timeline_spec(v), base, r.selected_slot, out);
      break;
    case PanelId::kAttention: {
      const StepData& st = *v.step;
      const AttentionData& a = st.attention;
      if (a.empty()) break;
      const int li = r.attn_layer >= 0 && r.attn_layer < static_cast<int>(a.layers.size()) ? r.attn_layer : 0;
      const int head = r.attn_head >= 0 && r.attn_head < a.heads ? r.attn_head : -1;
      const int layer = a.layers[static_cast<size_t>(li)];
      const std::string name = base + "_l" + std::to_string(layer) + (head < 0 ? "_mean" : "_head" + std::to_string(head));
      // RMT and Transformer-XL maps as `mnemoscope step` draws them; the MTN joint map with its blocks.
      if (a.source == keys::kRmtAttnPrefix) heatmap(rmt_attention_spec(snap, doc, layer, head), name, -1, out);
      else if (a.source == keys::kTrxlAttnPrefix) heatmap(trxl_attention_spec(snap, doc, layer, head), name, -1, out);
      else heatmap(attention_map_spec(st, li, head), name, -1, out);
      if (!a.mass_names.empty()) {
        figure(viz::make_bars(a.traced_mass && head < 0 ? rmt_block_mass_spec(snap) : attention_mass_spec(st, head)),
               base + "_mass", out);
        std::vector<std::string> header{"layer", "head"};
        for (const auto& n : a.mass_names) header.push_back(n);
        std::vector<std::vector<std::string>> rows;
        for (size_t l = 0; l < a.layers.size(); ++l)
          for (int h = -1; h < a.heads; ++h) {
            std::vector<std::string> row{std::to_string(a.layers[l]), h < 0 ? std::string("mean") : std::to_string(h)};
            for (size_t k = 0; k < a.mass_names.size(); ++k) row.push_back(fmt(a.mass_at(static_cast<int>(l), h, static_cast<int>(k))));
            rows.push_back(std::move(row));
          }
        viz::write_csv_table(base + "_mass.csv", header, rows);
        out.push_back(base + "_mass.csv");
      }
      break;
    }
    case PanelId::kHashBuckets: {
      const auto paths = hash_paths(snap.trace);
      if (paths.empty()) break;
      std::string path = r.hash_path;
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) path = paths.front();
      const std::string scope = "segment " + std::to_string(snap.segment);
      const auto& counts = snap.trace.at(hash_counts_key(path));
      const std::string pb = base + "-" + path;
      heatmap(hash_loads_spec(path, counts, scope), pb + ".loads", -1, out);
      const int64_t table = std::max<int64_t>(0, std::min<int64_t>(r.hash_table, counts.size(0) - 1));
      figure(viz::make_bars(hash_table_bars_spec(path, counts, table, scope)), pb + ".table" + std::to_string(table), out);
      if (snap.trace.has(hash_p_key(path))) figure(viz::make_histogram(hash_p_spec(path, snap.trace.at(hash_p_key(path)), scope)), pb + ".p", out);
      std::vector<std::vector<std::string>> rows;
      for (const auto& p : paths) {
        auto rs = hash_stats_rows(p, hash_stats(snap.trace.at(hash_counts_key(p))));
        rows.insert(rows.end(), rs.begin(), rs.end());
      }
      viz::write_csv_table(base + "_stats.csv", hash_stats_header(), rows);
      out.push_back(base + "_stats.csv");
      break;
    }
    case PanelId::kMtnMemory:
      if (snap.trace.has(keys::kMtnKeptSource) && snap.trace.has(keys::kMtnKeptImportance) && snap.trace.has(keys::kMtnAge)) {
        figure(mtn_memory_figure(snap, doc), base, out);
        figure(mtn_document_figure(snap, doc), base + "_document", out);
        std::vector<std::vector<std::string>> rows;
        for (size_t i = 0; i < v.step->mtn.entries.size(); ++i) {
          const MtnEntry& e = v.step->mtn.entries[i];
          rows.push_back({std::to_string(i), std::to_string(e.source), e.source >= 0 ? token_text(doc, e.source) : "",
                          e.source >= 0 ? fmt(e.importance) : "", std::to_string(e.age)});
        }
        viz::write_csv_table(base + ".csv", {"entry", "source_token", "text", "importance", "age"}, rows);
        out.push_back(base + ".csv");
        if (snap.trace.has(keys::kMtnImportance) && snap.trace.has(keys::kMtnCandidateSource) &&
            snap.trace.has(keys::kMtnKeptIndex)) {
          figure(mtn_importance_figure(snap, doc), base + "_importance", out);
          auto spec = mtn_importance_spec(snap, doc);
          viz::write_csv_matrix(base + "_importance.csv", spec.rows, spec.cols, spec.values, spec.row_labels, spec.col_labels);
          out.push_back(base + "_importance.csv");
        }
      }
      break;
    case PanelId::kControls:
    case PanelId::kGallery:
    case PanelId::kDashboard:  // curves, written by export_panel itself
      break;
  }
}

}  // namespace

std::vector<std::string> export_panel(const ExportRequest& r) {
  const bool curves_only = r.panel == PanelId::kDashboard ||
                           (r.panel == PanelId::kControls && r.run_log && (!r.session || !r.session->step));
  if (r.panel == PanelId::kDashboard && !r.run_log) throw UsageError("the dashboard has no session to export; start with --session DIR");
  if (!curves_only && (!r.session || !r.session->info || !r.session->step || !r.session->step->snap))
    throw UsageError("nothing to export yet: step to a segment first");
  if (r.panel == PanelId::kGallery) throw UsageError("the gallery shows synthetic traces; export a panel of the live session");
  if (r.dir.empty()) throw UsageError("export: no folder given");
  try {
    check_out_dir(r.dir);
    make_dirs(r.dir);
  } catch (const UsageError& e) {
    std::string m = e.what();  // the CLI's wording names --out; here it is the folder field
    if (m.rfind("--out ", 0) == 0) m = "export folder " + m.substr(6);
    else if (m.rfind("--out: ", 0) == 0) m = "export folder: " + m.substr(7);
    else m = "export folder: " + m;
    throw UsageError(m);
  }
  std::vector<std::string> out;
  // Dashboard curves: <dir>/dashboard-<curve>.{png,svg,csv}, every point in the CSV.
  if (r.run_log && (r.panel == PanelId::kDashboard || r.panel == PanelId::kControls)) {
    FigureFormats fm;
    fm.png = fm.svg = fm.csv = true;
    const std::string cd = r.dir + "/dashboard";
    make_dirs(cd);
    for (const auto& name : RunLog::curve_names()) {
      auto paths = write_session_curve(*r.run_log, name, 0, std::numeric_limits<int64_t>::max(), cd, fm, r.compare_log.get());
      out.insert(out.end(), paths.begin(), paths.end());
    }
  }
  if (curves_only) return out;
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "/seg-%04lld-", static_cast<long long>(r.session->step->segment));
  const std::string p = r.dir + prefix;
  if (r.panel == PanelId::kControls) {
    for (PanelId id : {PanelId::kDocument, PanelId::kWriterAttention, PanelId::kSlotTypes, PanelId::kForgetting,
                       PanelId::kMemory, PanelId::kTimeline, PanelId::kAttention, PanelId::kHashBuckets,
                       PanelId::kMtnMemory})
      export_one(id, r, p, out);
  } else {
    export_one(r.panel, r, p, out);
  }
  return out;
}

ExportJob::~ExportJob() {
  if (thread_.joinable()) thread_.join();
}

bool ExportJob::start(ExportRequest req) {
  if (running_.load()) return false;
  if (thread_.joinable()) thread_.join();
  running_ = true;
  thread_ = std::thread([this, req = std::move(req)] {
    std::vector<std::string> paths;
    std::string error;
    try {
      paths = export_panel(req);
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      paths_ = std::move(paths);
      error_ = std::move(error);
      has_result_ = true;
    }
    running_ = false;
  });
  return true;
}

bool ExportJob::take_result(std::vector<std::string>* paths, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!has_result_) return false;
  has_result_ = false;
  *paths = std::move(paths_);
  *error = std::move(error_);
  return true;
}

}  // namespace mnemo::app
