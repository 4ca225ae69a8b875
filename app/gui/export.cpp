#include "app/gui/export.h"

#include "app/cli_common.h"
#include "app/figures.h"
#include "app/view_model.h"
#include "core/trace/analysis.h"
#include "viz/export.h"

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
    case PanelId::kControls:
    case PanelId::kGallery:
      break;
  }
}

}  // namespace

std::vector<std::string> export_panel(const ExportRequest& r) {
  if (!r.session || !r.session->info || !r.session->step || !r.session->step->snap)
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
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "/seg-%04lld-", static_cast<long long>(r.session->step->segment));
  const std::string p = r.dir + prefix;
  std::vector<std::string> out;
  if (r.panel == PanelId::kControls) {
    for (PanelId id : {PanelId::kDocument, PanelId::kWriterAttention, PanelId::kSlotTypes, PanelId::kForgetting,
                       PanelId::kMemory, PanelId::kTimeline})
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
