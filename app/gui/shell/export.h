// Export from the desktop app: each panel as PNG (2x), SVG and CSV, with the figure builders
// the CLI uses (app/figures/), on a background thread (large maps take a while to rasterise).
#pragma once
#include "app/figures/compare.h"
#include "app/view/published_view.h"
#include "app/gui/panels/registry.h"
#include "core/train/run_log.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mnemo::app {

// The panel, the published view and every panel's selections (PanelSelections: head, thresholds,
// selected slot, attention layer and head, hash projection and table).
struct ExportRequest : PanelSelections {
  PanelId panel = PanelId::kControls;  // kControls exports every panel (each registry entry with an Export)
  ViewPtr view;
  std::shared_ptr<const RunLog> run_log;      // Training dashboard: the session's curves
  std::shared_ptr<const RunLog> compare_log;  // and the overlaid session's (may be null)
  // Side by side (docs/gui.md#side-by-side): the second model's view, the column names and
  // whether both share one colour scale; Export then also writes seg-NNNN-side_by_side.*.
  // Export then also writes each side's panel figures, seg-NNNN-A-<panel>.* of `view` and
  // seg-NNNN-B-<panel>.* of `compare` (with B's selections, compare_sel), a panel only for the
  // side(s) it applies to. range_a / range_b: the colour range each side's map is drawn on
  // (the slide uses them; NaN: same_scale decides).
  ViewPtr compare;
  PanelSelections compare_sel;
  std::string label_a = "A", label_b = "B";
  bool same_scale = false;
  ColourRange range_a, range_b;
  std::string dir;
};

// Writes the panel's files into req.dir (created) as <dir>/seg-NNNN-<name>.{png,svg,csv}
// (the dashboard's curves as <dir>/dashboard/<curve>.*); returns the paths. Throws
// InputError (nothing to export, a bad folder) or IoError (a write failed), naming the path.
std::vector<std::string> export_panel(const ExportRequest& req);

// Default folder for exports: "<document's directory>/mnemoscope-export", or
// "$HOME/mnemoscope-export" for a document inside `shipped_dir` (the program's assets: a zoo
// model's or a tour's document), so nothing is written into the installation.
std::string default_export_dir(const PublishedView& s, const std::string& shipped_dir = "");

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
