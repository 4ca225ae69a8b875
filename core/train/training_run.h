// TrainingRun: one training run into a session folder (docs/formats.md#sessions), without a
// command line. It owns the session (a new one created, or an existing one resumed from its
// newest checkpoint that loads), the Trainer, the checkpoints, the probe recordings
// (core/train/recorder.h), --hash-stats-every's bucket statistics (core/train/hash_probe.h),
// every metrics.log record (core/train/run_log.h) and the end-of-run evaluations, and reports
// what happens through a TrainingRunObserver. It prints nothing: `mnemoscope train`
// (app/commands/train.cpp) keeps the flags, the signals, the distributed options and the
// console line, and implements the observer.
//
// A run is driven in phases, in this order (each may throw before anything is written):
//   open_existing()                       resuming: lock, open, load the newest checkpoint
//   build(cfg, device)                    the Trainer (nothing written)
//   check_probe_example(), set_process_group(), init_from(), restore_resume_point(), sync()
//   create_session() | repair_log() + append_resume_record()
//   prepare(), start_hash_stats(), train(stop, checkpoint_now)
//   then: leave_group(), save_if_unsaved(), record_final_probe(), final_evaluations()
// Only the writer (one process, or rank 0 of a group) writes; another rank trains alongside
// and its TrainingRun writes and reports nothing but its own steps' progress.
#pragma once
#include "core/data/document.h"
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"
#include "core/train/trainer.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo {

namespace platform {
class MemoryActivity;
}

// Why a checkpoint was written.
enum class SaveReason {
  kScheduled,  // the Trainer's schedule: save_every, save_at_eval, save_every_seconds
  kRequested,  // the checkpoint_now flag of train() was set (e.g. SIGUSR1, the app's "Checkpoint now")
  kEnd,        // the last step at the end, or where the run stopped (save_if_unsaved)
};

// What a TrainingRun reports, on the thread that drives it. Every method does nothing by
// default.
class TrainingRunObserver {
 public:
  virtual ~TrainingRunObserver() = default;
  // Something the user should know that does not stop the run, as one line ("warning: ..."):
  // a probe recording that failed and is switched off, a probe that cannot be made.
  virtual void on_notice(const std::string& line) {}
  // After a step's record (and its hash statistics, probe recording and requested
  // checkpoint) was written.
  virtual void on_step(const StepMetrics& m) {}
  // Every evaluation during training (before its record is written).
  virtual void on_eval(const EvalMetrics& e) {}
  // The curriculum moved (before its record is written).
  virtual void on_curriculum(const CurriculumChange& ch) {}
  // A checkpoint was written to `path`.
  virtual void on_save(int64_t step, const std::string& path, SaveReason why) {}
  // One of the end-of-run evaluations (before its record is written).
  virtual void on_final_eval(const EvalMetrics& e) {}
};

class TrainingRun {
 public:
  // A run into the session folder `dir`. `writer`: this process writes the session.
  TrainingRun(std::string dir, bool writer, TrainingRunObserver& observer);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  const std::string& dir() const { return dir_; }
  bool writer() const { return writer_; }

  // ---- Set-up: nothing is written until create_session() / repair_log().
  // Resuming (writer only): takes the folder's single-writer lock (when it is a folder) before
  // io::Session::open removes stale temp files, opens it and loads its newest checkpoint that
  // loads (resume_point(); none when the run stopped before its first). Throws io::SessionError.
  void open_existing();
  const std::optional<io::LoadedCheckpoint>& resume_point() const { return resume_from_; }
  // The session; only after open_existing() or create_session().
  io::Session& session() { return *session_; }
  bool has_session() const { return session_.has_value(); }

  // Builds the Trainer of `cfg` on `device` (task, model, optimizer) and checks that the task
  // can train the model (Trainer::check_trainable: ConfigError).
  void build(const TrainingConfig& cfg, torch::Device device);
  const TrainingConfig& config() const { return cfg_; }
  Trainer& trainer() { return *trainer_; }
  const Trainer& trainer() const { return *trainer_; }
  // ConfigError when train.record_every > 0 and train.record_example is not a test example.
  void check_probe_example() const;
  // Data parallel over `pg` (not owned; Trainer::set_process_group: ConfigError when
  // train.batch < the ranks). world_size() follows it.
  void set_process_group(dist::ProcessGroup* pg);
  int world_size() const { return world_; }
  // Fine-tuning: the model starts from `w` (all of it, or with `matching` the tensors whose
  // name and shape fit; the others as the seed gives them), recorded in the manifest by
  // create_session(). A misfit throws Error; `misfit_fix` ends its message (what to do).
  // Returns what was taken with `matching`.
  const std::optional<MatchedWeights>& init_from(WeightsFile w, bool matching, const std::string& config_path,
                                                 const std::string& misfit_fix);
  const std::optional<WeightsFile>& init_weights() const { return init_; }
  // Whether any dropout of the model drops anything (the only randomness of a step besides
  // the examples drawn).
  bool model_has_dropout() const;
  // Restores resume_point() into the Trainer (ConfigError for another model config).
  void restore_resume_point();
  // Every rank starts from rank 0's weights, optimizer state, step and curriculum
  // (dist::RendezvousError when a rank is lost: nothing was written yet).
  void sync();
  // Resuming a run whose steps are done: whether some of its end-of-run evaluations are
  // missing from metrics.log (a run killed while writing them).
  bool final_evaluations_missing() const;

  // ---- The session changes from here on.
  // A new session (writer only): manifest.json holds kind "train", the config, `config_path`,
  // the init_from() weights and the world size when > 1; then the single-writer lock.
  // Throws io::SessionError (the folder exists and is not empty, ...).
  void create_session(const std::string& config_path);
  // Resuming: cuts a torn tail of metrics.log so records appended from here on are readable;
  // returns what was cut ("" when nothing). Throws IoError.
  std::string repair_log();
  // Resuming: the resume record; records after its step (written before a crash) are superseded.
  void append_resume_record();

  // ---- The loop.
  // Before the loop (or the end-of-run evaluations of a run whose steps are done): the probe
  // document, and what an out-of-memory error names from here on (activity_name).
  void prepare();
  // --hash-stats-every: at the start (step 0) and every `every` steps, the bucket statistics of
  // the hashed projections to hash_stats_path(). False (nothing recorded) when the model has
  // no hashed projection.
  bool start_hash_stats(int64_t every);
  std::string hash_stats_path() const { return dir_ + "/hash_stats.csv"; }
  // How the run can be continued, for the message of a checkpoint that cannot be written
  // (e.g. "mnemoscope train --out DIR --resume").
  void set_continue_hint(std::string hint) { continue_hint_ = std::move(hint); }
  // Trains to train.steps, the `stop` flag or a non-finite loss: a step record every step,
  // probe recordings every record_every steps (and at step 0 of a new run), evaluations,
  // curriculum changes and scheduled checkpoints, and one whenever `checkpoint_now` was set
  // (cleared then). Rethrows what a step throws (out of memory, dist::PeerError).
  TrainOutcome train(const std::atomic<bool>* stop = nullptr, std::atomic<bool>* checkpoint_now = nullptr);
  // What an out-of-memory error names: "training step N (batch B x S segments of L tokens)".
  std::string activity_name(int64_t step) const;

  // ---- The end (writer).
  // The other ranks leave: the writer saves and evaluates alone.
  void leave_group();
  // An `error` record at `step` (sync: flushed to disk at once).
  void append_error(int64_t step, const std::string& message, bool sync = false);
  // A checkpoint of the current step when it has none yet (on_save, SaveReason::kEnd); its path, or nullopt.
  std::optional<std::string> save_if_unsaved();
  // The probe recording of the current step (when record_every > 0).
  void record_final_probe();
  // valid, then test; each also with the memory zeroed when the config asks and the model has
  // one: on_final_eval, then the record.
  void final_evaluations();
  // The steps of the checkpoints in the session, oldest first.
  std::vector<int64_t> checkpoint_steps() const { return session_->checkpoint_steps(); }

 private:
  std::string save(int64_t step);
  void make_probe();
  void record(int64_t step);
  void record_hash_stats(int64_t step);
  void on_step(const StepMetrics& m, std::atomic<bool>* checkpoint_now);
  void on_eval(const EvalMetrics& e);
  void on_curriculum(const CurriculumChange& ch);
  void on_save(int64_t step);

  const std::string dir_;
  const bool writer_;
  TrainingRunObserver& obs_;
  std::unique_ptr<io::SessionWriteLock> lock_;  // the writer holds it while it may write the session
  std::optional<io::Session> session_;
  std::optional<io::LoadedCheckpoint> resume_from_;
  TrainingConfig cfg_;
  std::optional<WeightsFile> init_;
  std::optional<MatchedWeights> matched_;
  dist::ProcessGroup* pg_ = nullptr;
  std::optional<Trainer> trainer_;
  int world_ = 1;
  std::string continue_hint_;

  int64_t hash_stats_every_ = 0;
  int64_t last_saved_ = 0, last_recorded_ = -1;
  std::optional<Document> probe_;         // the test example train.record_example, as a document
  std::vector<uint8_t> probe_scored_;     // the probe tokens the task scores ("scored_loss" of probe records)
  std::optional<TaskBatch> probe_batch_;  // the hash statistics' batch
  std::unique_ptr<platform::MemoryActivity> activity_;
};

}  // namespace mnemo
