// Export from the desktop app: each panel as PNG (2x), SVG and CSV, built with the same viz
// code and spec builders as the CLI (app/figures.h), plus builders for the panels the CLI
// does not draw (memory, slot timeline, per-token loss).
#pragma once
#include "app/gui/session.h"
#include "app/panels/panels.h"
#include "core/train/run_log.h"
#include "viz/charts.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mnemo::app {

// Slot types under the user's thresholds (re-classified from the writer attention).
viz::BarSpec slot_types_spec(const Snapshot& snap, const SlotThresholds& th);
// Memory after the step: rows = slots, columns = dimensions (diverging, 0 = white).
viz::HeatmapSpec memory_spec(const Snapshot& snap);
// Slot timeline: rows = slots, one column per visited segment, self-attention mass 0..1.
viz::HeatmapSpec timeline_spec(const SessionView& s);
// Loss per document token over the visited segments (x = token index).
viz::LineSpec token_loss_spec(const SessionView& s);
// The Attention panel's map (layer index li, head -1 = mean) with its blocks, from the
// step's arrays; and its block masses per layer (mean over heads, or one head) as bars.
viz::HeatmapSpec attention_map_spec(const StepData& st, int li, int head);
viz::BarSpec attention_mass_spec(const StepData& st, int head);

struct ExportRequest {
  PanelId panel = PanelId::kControls;  // kControls exports every panel
  SessionPtr session;
  int head = -1;                       // writer attention head (-1 mean)
  SlotThresholds thresholds;
  int selected_slot = -1;              // highlighted in the heatmaps
  int attn_layer = 0;                  // Attention: index into StepData::attention.layers
  int attn_head = -1;                  // Attention: head (-1 mean)
  std::string hash_path;               // Hash buckets: projection ("" = the first)
  int hash_table = 0;                  // Hash buckets: the table drawn as bars
  std::shared_ptr<const RunLog> run_log;      // Training dashboard: the session's curves
  std::shared_ptr<const RunLog> compare_log;  // and the overlaid session's (may be null)
  std::string dir;
};

// Writes the panel's files into req.dir (created) as <dir>/seg-NNNN-<name>.{png,svg,csv};
// returns the paths. Throws UsageError (directory) or viz::ExportError (a write failed),
// both with messages naming the path.
std::vector<std::string> export_panel(const ExportRequest& req);

// Default folder for exports: "<document's directory>/mnemoscope-export".
std::string default_export_dir(const SessionView& s);

// One export at a time on a background thread (large maps take a while to rasterise).
class ExportJob {
 public:
  ~ExportJob();
  bool running() const { return running_.load(); }
  // Starts unless one is running (returns false then).
  bool start(ExportRequest req);
  // When a finished job has results not yet taken: fills paths or error and returns true.
  bool take_result(std::vector<std::string>* paths, std::string* error);

 private:
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mu_;
  bool has_result_ = false;
  std::vector<std::string> paths_;
  std::string error_;
};

}  // namespace mnemo::app
