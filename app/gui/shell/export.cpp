#include "app/gui/shell/export.h"

#include "app/figures/attention.h"
#include "app/figures/compare.h"
#include "app/figures/hash.h"
#include "app/figures/memformer.h"
#include "app/figures/mtn.h"
#include "app/figures/provenance.h"
#include "app/figures/session.h"
#include "core/errors.h"
#include "core/io/atomic_file.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace mnemo::app {

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

// Every format; a live model without a checkpoint stamps each figure as randomly initialised.
FigureFormats figure_formats(const SessionView& v) {
  FigureFormats fm = FigureFormats::all();
  if (v.info && v.info->random_weights) fm.stamp = random_weights_stamp(v.info->cfg.model, v.info->seed);
  return fm;
}

void export_one(PanelId id, const ExportRequest& r, const std::string& prefix, std::vector<std::string>& out) {
  const SessionView& v = *r.session;
  const StepData& st = *v.step;
  const Document& doc = *v.info->doc;
  const FigureFormats fm = figure_formats(v);
  const std::string base = prefix + panel_file_name(id);
  switch (id) {
    case PanelId::kDocument:
      write_token_losses(v.visited, doc, v.info->segment_len, base, fm, out);
      if (v.provenance && r.selected_slot >= 0)
        write_provenance(*v.provenance, r.selected_slot, doc, v.info->segment_len,
                         base + "_provenance_slot" + std::to_string(r.selected_slot), fm, out);
      break;
    case PanelId::kWriterAttention:
      write_writer_attention(st, r.head, r.selected_slot, base + (r.head < 0 ? "_mean" : "_head" + std::to_string(r.head)),
                             fm, out);
      break;
    case PanelId::kSlotTypes:
      write_slot_types(st, r.thresholds, base, fm, out);
      break;
    case PanelId::kForgetting:
      write_forgetting(st, base, fm, out);
      break;
    case PanelId::kMemory:
      write_memory(st, r.selected_slot, base, fm, out);
      break;
    case PanelId::kTimeline:
      write_timeline(v.visited, r.selected_slot, base, fm, out);
      write_slot_holdings(v.visited, r.selected_slot, doc, base + "_holds_slot" + std::to_string(r.selected_slot), fm, out);
      break;
    case PanelId::kAttention: {
      const AttentionData& a = st.attention;
      if (a.empty()) break;
      const int li = r.attn_layer >= 0 && r.attn_layer < static_cast<int>(a.layers.size()) ? r.attn_layer : 0;
      const int head = r.attn_head >= 0 && r.attn_head < a.heads ? r.attn_head : -1;
      const int layer = a.layers[static_cast<size_t>(li)];
      write_attention_map(a, st.segment, li, head,
                          base + "_l" + std::to_string(layer) + (head < 0 ? "_mean" : "_head" + std::to_string(head)), fm, out);
      write_attention_masses(a, st.segment, head, base + "_mass", fm, out);
      break;
    }
    case PanelId::kHashBuckets:
      write_hash_projection(st.hash, r.hash_path, r.hash_table, base, base + "_stats.csv",
                            "segment " + std::to_string(st.segment), fm, out);
      break;
    case PanelId::kMtnMemory:
      write_mtn_memory(st, doc, base, base + "_document", base + "_importance", fm, out);
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
  if (r.panel == PanelId::kDashboard && !r.run_log)
    throw InputError("the dashboard has no session to export; start with --session DIR");
  if (!curves_only && (!r.session || !r.session->info || !r.session->step))
    throw InputError("nothing to export yet: step to a segment first");
  if (r.panel == PanelId::kGallery) throw InputError("the gallery shows synthetic traces; export a panel of the live session");
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
      auto paths = write_session_curve(*r.run_log, name, 0, std::numeric_limits<int64_t>::max(), cd, FigureFormats::all(),
                                       r.compare_log.get());
      out.insert(out.end(), paths.begin(), paths.end());
    }
    auto finals = write_final_evaluations(*r.run_log, cd, FigureFormats::all());
    out.insert(out.end(), finals.begin(), finals.end());
  }
  if (curves_only) return out;
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "/seg-%04lld-", static_cast<long long>(r.session->step->segment));
  const std::string p = r.dir + prefix;
  // Side by side: A | B | A - B of the writer attention (or the attention layer shown).
  if (r.compare && r.compare->step &&
      (r.panel == PanelId::kControls || r.panel == PanelId::kWriterAttention || r.panel == PanelId::kAttention))
    write_side_by_side(*r.session->step, *r.compare->step, r.label_a, r.label_b,
                       r.panel == PanelId::kAttention ? r.attn_head : r.head, r.attn_layer, r.same_scale, p + "side_by_side",
                       figure_formats(*r.session), out);
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
