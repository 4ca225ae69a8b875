// The training dashboard's data (no ImGui): the followed session's metrics.log read into
// curves as it grows (RunLogFollower, only what was appended since the last poll), a second
// session to compare with, which probe recording the map panels show (driving the replay),
// the training run started from the app (TrainingProcess), and the config editor's checks.
// The Dashboard panel (app/gui/panels/dashboard.h) draws it. Not thread-safe: UI thread only.
#pragma once
#include "app/gui/model/training_process.h"
#include "core/train/run_log.h"
#include "viz/series.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

class ReplayController;

// One line on a distributed run for the dashboard's header, from the newest step record:
// "2 ranks · rank 0 12.3k tok/s · rank 1 11.8k tok/s · slowest: rank 1 · allreduce 4% of the
// step" ("" for one process).
std::string distributed_summary(const DistributedStatus& d);

class DashboardModel {
 public:
  // A chart's series: one per curve name (a name may give several: train / valid, ...).
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
    bool open() const { return static_cast<bool>(follower); }
  };

  // Follows `dir` (a session directory); replay may be null (no map panels to drive).
  void open(const std::string& dir, ReplayController* replay);
  // Overlays a second session ("" removes it). Throws when `dir` cannot be followed.
  void compare_with(const std::string& dir);
  bool is_open() const { return main_.open() || !main_.charts.empty(); }
  // Synthetic curves for the benchmark: `curves` series of `points` points each (NaNs included).
  void load_synthetic(int curves, int64_t points);
  // Reads what the followed sessions appended, starts following a run started here once its
  // manifest exists, and keeps the replay on the newest recording when following it.
  void poll();

  const Source& main() const { return main_; }
  const Source& other() const { return other_; }
  const RunLog* run_log() const { return main_.follower ? &main_.follower->log() : nullptr; }
  const RunLog* compare_log() const { return other_.follower ? &other_.follower->log() : nullptr; }
  const std::string& dir() const { return main_.dir; }
  // A problem met while polling or opening ("" when none).
  const std::string& error() const { return error_; }
  void set_error(std::string e) { error_ = std::move(e); }

  // --- Recordings: which training step's probe the map panels show. ---
  const std::vector<int64_t>& recording_steps() const;
  int recording_index() const { return recording_index_; }
  // Shows recording `index` (clamped); false when it cannot be read (the replay says why).
  bool select_recording(int index);
  bool follow_latest() const { return follow_latest_; }
  void set_follow_latest(bool on) { follow_latest_ = on; }
  bool has_replay() const { return replay_ != nullptr; }

  // --- Training from the app. ---
  TrainingProcess& training() { return train_; }
  // Starts `config` into `out` ("" = the default session directory; config "" = resume
  // `out`) and follows it once its manifest exists. Returns false with *error set.
  bool start_training(const std::string& config, const std::string& out, std::string* error);
  // Processes of the runs Start / Continue launch (1: one process; N: `train --nproc N`).
  int train_nproc() const { return train_nproc_; }
  void set_train_nproc(int n) { train_nproc_ = std::max(1, std::min(n, 64)); }
  // The test example a new run's probe recordings step (train.record_example, checked by
  // `train` against the task's test split); -1 = the config's own (0 unless it sets one).
  int probe_example() const { return probe_example_; }
  void set_probe_example(int i) { probe_example_ = std::max(-1, i); }
  // The --set's Start passes: train.record_example=<probe example> when one is chosen.
  std::vector<std::string> start_sets() const;
  // The config that Start uses.
  const std::string& train_config() const { return train_config_; }
  void set_train_config(std::string path) { train_config_ = std::move(path); }

  // --- The config editor. ---
  // Loads `path` for editing (false + *error when unreadable or over 1 MiB); the suggested
  // save name is "<path without .json>-edited.json".
  bool edit_config(const std::string& path, std::string* error);
  // Validates `text` as a training config (false + *error naming the field; nothing written
  // then), writes it atomically to `save_as` and makes it the config Start uses.
  bool save_config(const std::string& text, const std::string& save_as, std::string* error);
  bool editing() const { return editing_; }
  void stop_editing() { editing_ = false; }
  std::string& edit_text() { return edit_text_; }
  std::string& edit_save_as() { return edit_save_as_; }
  std::string& edit_error() { return edit_error_; }

 private:
  void sync(Source& s);

  Source main_, other_;
  ReplayController* replay_ = nullptr;
  bool follow_latest_ = true;
  int recording_index_ = -1;
  std::string error_;
  TrainingProcess train_;
  std::string train_config_ = "sessions/copy-rmt-tiny.json";
  int train_nproc_ = 1;
  int probe_example_ = -1;
  std::string waiting_for_;  // a started run's directory, until its manifest appears
  bool editing_ = false;
  std::string edit_text_, edit_save_as_, edit_error_;
};

}  // namespace mnemo::app
