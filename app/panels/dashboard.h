// The training dashboard (issue 7): live curves of a session being trained (or finished)
// read from its metrics.log by a RunLogFollower — loss / perplexity / accuracy for train
// and valid, learning rate, gradient norm, tokens/s, peak memory, and the memory
// diagnostics of the probe recordings (slot types, forgetting norms, RMT block masses,
// bucket entropy) — plus a recording selector that tells the replay which training step's
// probe traces the map panels show. A second session can be overlaid (dashed) to compare.
// Curves draw at most two points per pixel column (viz/ui/curves.h). Polling reads only
// what was appended since the last poll, twice a second, on the UI thread.
#pragma once
#include "app/gui/training_process.h"
#include "app/panels/panels.h"
#include "core/train/run_log.h"
#include "viz/series.h"
#include "viz/ui/curves.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

class ReplayController;

class DashboardPanel {
 public:
  // Follows `dir` (a session directory); replay may be null (no map panels to drive).
  void open(const std::string& dir, ReplayController* replay);
  // Overlays a second session ("" removes it).
  void compare_with(const std::string& dir);
  bool is_open() const { return static_cast<bool>(main_.follower) || !main_.charts.empty(); }
  // Synthetic curves for the benchmark: `curves` series of `points` points each (NaNs included).
  void load_synthetic(int curves, int64_t points);
  void draw(PanelContext& ctx);
  // Polls the followed sessions now (the panel also polls itself every 0.5 s while drawn).
  void poll();
  const RunLog* run_log() const { return main_.follower ? &main_.follower->log() : nullptr; }
  const RunLog* compare_log() const { return other_.follower ? &other_.follower->log() : nullptr; }
  const std::string& dir() const { return main_.dir; }
  // The training run started from the panel (a child `mnemoscope train`, see training_process.h).
  TrainingProcess& training() { return train_; }
  // What the panel's Start button does: starts `config` into `out` ("" = the default session
  // directory) and follows it once its manifest exists. Returns false with *error set.
  bool start_training(const std::string& config, const std::string& out, std::string* error);
  // The config editor: loads `path` into the editor (false + *error when unreadable), and
  // saves the edited text to `save_as` after validating it as a training config (false +
  // *error naming the field; nothing written then). A saved config becomes the one Start uses.
  bool edit_config(const std::string& path, std::string* error);
  bool save_config(const std::string& text, const std::string& save_as, std::string* error);

 private:
  struct Chart {
    std::vector<std::string> names;
    std::vector<viz::MinMaxSeries> series;
  };
  struct Source {
    std::string dir;
    std::unique_ptr<RunLogFollower> follower;
    uint64_t synced_epoch = ~uint64_t{0}, synced_version = ~uint64_t{0};
    size_t steps = 0, evals = 0, probes = 0;  // records already turned into points
    std::map<std::string, Chart> charts;      // curve name -> series
  };
  void sync(Source& s);
  void draw_header(PanelContext& ctx);
  void draw_recordings(PanelContext& ctx);
  void draw_training(PanelContext& ctx);

  Source main_, other_;
  std::map<std::string, viz::ui::CurveView> views_;
  ReplayController* replay_ = nullptr;
  double next_poll_ = 0;
  bool follow_latest_ = true;
  int recording_index_ = -1;
  std::string compare_input_;
  char compare_buf_[512] = {0};
  std::string error_;
  TrainingProcess train_;
  char train_config_[512] = "sessions/copy-rmt-tiny.json";
  char train_out_[512] = {0};
  std::string waiting_for_;  // a started run's directory, until its manifest appears
  bool editing_ = false;
  std::string edit_text_, edit_save_as_, edit_error_;
};

}  // namespace mnemo::app
