#include "app/gui/shell/export.h"

#include "app/figures/compare.h"
#include "app/figures/run_curves.h"
#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/paths.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <limits>

namespace mnemo::app {

std::string default_export_dir(const PublishedView& s, const std::string& shipped_dir) {
  const std::string dir = s.info && s.info->doc && !s.info->doc->path.empty() ? io::parent_directory(s.info->doc->path) : ".";
  // A document shipped with Mnemoscope (a zoo model's, a tour's) lives in the program's assets:
  // exports of it go to the user's home, not into the installation or the repository.
  const char* home = std::getenv("HOME");
  if (!shipped_dir.empty() && home && *home && io::path_within(dir, shipped_dir)) return std::string(home) + "/mnemoscope-export";
  return dir + "/mnemoscope-export";
}

namespace {

// Every format; a live model without a checkpoint stamps each figure as randomly initialised.
FigureFormats figure_formats(const PublishedView& v) {
  FigureFormats fm = FigureFormats::all();
  if (v.info && v.info->random_weights) fm.stamp = random_weights_stamp(v.info->cfg.model, v.info->seed);
  return fm;
}

void export_one(PanelId id, const PublishedView& v, const PanelSelections& sel, const std::string& prefix,
                std::vector<std::string>& out) {
  const PanelDef& def = panel_def(id);
  if (!def.write) return;  // Controls, Gallery, Dashboard (its curves: export_panel itself)
  const FigureFormats fm = figure_formats(v);
  const std::string base = prefix + def.file_name;
  def.write(PanelExport{v, sel, base, fm, out});
}

}  // namespace

std::vector<std::string> export_panel(const ExportRequest& r) {
  const bool curves_only = r.panel == PanelId::kDashboard ||
                           (r.panel == PanelId::kControls && r.run_log && (!r.view || !r.view->step));
  if (r.panel == PanelId::kDashboard && !r.run_log)
    throw InputError("the dashboard has no session to export; start with --session DIR");
  if (!curves_only && (!r.view || !r.view->info || !r.view->step))
    throw InputError("nothing to export yet: step to a segment first");
  if (r.panel == PanelId::kGallery) throw InputError("the gallery shows synthetic traces; export a panel of the opened model");
  if (r.dir.empty()) throw InputError("export: no folder given");
  io::check_output_dir(r.dir, "export folder");
  try {
    io::make_dirs(r.dir);
  } catch (const IoError& e) {
    throw InputError(std::string("export folder: ") + e.what());
  }
  std::vector<std::string> out;
  // Dashboard curves: <dir>/dashboard/<curve>.{png,svg,csv}, every point in the CSV.
  if (r.run_log && (r.panel == PanelId::kDashboard || r.panel == PanelId::kControls)) {
    const std::string cd = r.dir + "/dashboard";
    io::make_dirs(cd);
    for (const auto& name : RunLog::curve_names()) {
      auto paths = write_run_curve(*r.run_log, name, 0, std::numeric_limits<int64_t>::max(), cd, FigureFormats::all(),
                                       r.compare_log.get());
      out.insert(out.end(), paths.begin(), paths.end());
    }
    auto finals = write_final_evaluations(*r.run_log, cd, FigureFormats::all());
    out.insert(out.end(), finals.begin(), finals.end());
  }
  if (curves_only) return out;
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "/seg-%04lld-", static_cast<long long>(r.view->step->segment));
  const std::string p = r.dir + prefix;
  // Side by side: A's map over B's (each side's writer attention or attention layer shown), and A - B.
  if (r.compare && r.compare->step &&
      (r.panel == PanelId::kControls || r.panel == PanelId::kWriterAttention || r.panel == PanelId::kAttention))
    write_side_by_side(*r.view->step, *r.compare->step, r.label_a, r.label_b, r.head, r.attn_layer, r.attn_head,
                       r.same_scale, r.selected_slot, p + "side_by_side", figure_formats(*r.view), out, r.range_a,
                       r.range_b);
  // Side by side: each side's own figures too, named by side, each where its panel applies.
  const bool sides = r.compare && r.compare->step && r.compare->info;
  auto export_panel_of = [&](PanelId id) {
    if (!sides) {
      export_one(id, *r.view, r, p, out);
      return;
    }
    if (panel_applies(id, *r.view)) export_one(id, *r.view, r, p + "A-", out);
    if (panel_applies(id, *r.compare)) export_one(id, *r.compare, r.compare_sel, p + "B-", out);
  };
  if (r.panel == PanelId::kControls) {
    for (const PanelDef& d : panel_registry())
      if (d.per_model) export_panel_of(panel_id(d));
  } else {
    export_panel_of(r.panel);
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
