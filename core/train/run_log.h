// A training session's metrics.log: its records, each built by one writer below (appended by
// `mnemoscope train`, app/commands/train.cpp), and read back as curves (docs/formats.md#sessions).
// Record types:
//   {"type":"step",  "step", "loss", "accuracy", "lr", "grad_norm", "tokens_per_s", "seconds",
//                    "peak_rss_mib", "world_size", ["non_finite": true]; a distributed run also
//                    "rank_seconds": [...], "rank_tokens_per_s": [...], "allreduce_seconds"}
//   {"type":"eval",  "step", "split", "loss", "accuracy", "exact_match", ...["final": true]}
//   {"type":"probe", "step", "loss", ["scored_loss", "scored_tokens"], "slot_types", "forget_norm",
//                    "rmt_block_mass", "hash_entropy"}
//   {"type":"eval", ..., "zero_memory": true}  the same evaluation with the memory zeroed
//   {"type":"curriculum", "step", "from", "to", "segments", "reason"}  a curriculum change after step
//   {"type":"resume", "step", "checkpoint", "world_size"}  training restarted from the checkpoint of this step
//   {"type":"error", "step", "message"}
// NaN/Inf numbers are stored as JSON null and come back as NaN. A "resume" record drops the
// step/eval/probe records of steps after its step that were written before it (the steps a
// crash lost and the resumed run does again) and the final evaluations of its own step, so
// the curves are continuous and a run has one set of final evaluations.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo {

namespace io {
class Session;
struct LogReadResult;
}

struct Curve {
  std::string name;
  std::vector<double> x;  // training step, non-decreasing
  std::vector<double> y;  // NaN where the value was NaN/Inf (null in the log)
};

// Name of the valid curve evaluated with the memory zeroed (in "loss", "accuracy", "perplexity").
inline constexpr const char* kValidZeroMemoryCurve = "valid, memory zeroed";

// A damaged range of metrics.log the reader skipped (core/io/framed_log.h), placed between
// the training steps of the records around it.
struct MetricsGap {
  uint64_t begin = 0, end = 0;  // bytes [begin, end)
  std::string reason;
  int64_t step_before = -1;     // step of the last record before it (-1: none)
  int64_t step_after = -1;      // step of the first record after it (-1: none yet)
};
// How `export`, the dashboard and the Python reader name a gap:
//   "skipped bytes 3302-3366 of metrics.log (checksum mismatch in record payload) between step 31 and step 33"
std::string describe_gap(const MetricsGap& g);

// One end-of-run evaluation of a session (an eval record with "final": true).
struct FinalEval {
  int64_t step = 0;
  std::string split;         // "valid", "test", or what the writer named it
  bool zero_memory = false;  // the ablation: memory zeroed between segments
  double loss = 0, accuracy = 0, bits_per_token = 0;  // NaN where the log had null
};
// "valid (memory zeroed): loss 0.1234, accuracy 0.9870" (no accuracy where it is NaN)
std::string describe_final(const FinalEval& f);

// A distributed run's latest step record, for the dashboard (docs/training.md#distributed).
struct DistributedStatus {
  int world_size = 1;                      // 1 for one process or a log without the field
  int64_t step = -1;                       // the step it describes (-1: no step record)
  std::vector<double> rank_tokens_per_s;   // per rank, over its forward/backward
  std::vector<double> rank_seconds;        // per rank, seconds of its forward/backward
  int slowest_rank = -1;                   // the rank with the most seconds (-1 when unknown)
  double allreduce_share = -1;             // allreduce seconds / step seconds on rank 0 (-1 unknown)
};

struct RunLog {
  std::vector<nlohmann::json> steps, evals, probes, errors, curricula;
  int64_t resumes = 0;
  std::vector<MetricsGap> gaps;  // damage skipped in the middle of the log, in file order

  // Named curves over training steps. `name` is one of curve_names(); unknown names throw
  // std::invalid_argument listing the known ones. A name may give several curves (train and
  // valid loss, and "valid, memory zeroed" when recorded; one per slot type; one per RMT
  // layer and block; "segments": the curriculum's count as a step function). Empty when the
  // log has no such data.
  std::vector<Curve> curves(const std::string& name) const;
  static const std::vector<std::string>& curve_names();
  int64_t last_step() const;  // highest step of any record (-1 when none)
  DistributedStatus distributed_status() const;
  // The curriculum's changes in step order (what charts mark with a vertical line).
  struct CurriculumMark {
    int64_t step = 0, from = 0, to = 0;
    std::string reason;
  };
  std::vector<CurriculumMark> curriculum_marks() const;
  // The end-of-run evaluations ({"final": true} records): valid, then test, each without and
  // then with the memory zeroed; one per split and ablation (a later record replaces an earlier).
  std::vector<FinalEval> final_results() const;
  // Whether eval record `r` is a final evaluation that a periodic one of this log (same split
  // and ablation, same step) stands for: the curves leave it out, so a run whose last step is
  // an eval_every multiple has one point there; a final one at any other step ends its curve.
  bool final_shadowed(const nlohmann::json& r) const;
};

RunLog parse_run_log(const std::vector<nlohmann::json>& records);
// The same, with the gaps of `read` placed between the steps of the records around them;
// `records` are the parsed records of `read` in file order, one per read.offsets entry (as
// io::Session::read_metrics returns them).
RunLog parse_run_log(const std::vector<nlohmann::json>& records, const io::LogReadResult& read);

// The records `mnemoscope train` appends to metrics.log, one writer per type (the table in
// docs/training.md "Metrics records"); parse_run_log reads each back. NaN/Inf become null.
// world_size: the ranks of a distributed run, recorded on its records when > 1 (a step
// record always names it; a resume record too).
struct StepMetrics;
struct EvalMetrics;
struct CurriculumChange;
// One optimizer step (a non-finite step is marked and carries the number of the step that failed).
nlohmann::json step_record(const StepMetrics& m, double peak_rss_mib);
// One evaluation; final_eval_record marks an end-of-run one ("final": true).
nlohmann::json eval_record(const EvalMetrics& e, int world_size = 1);
nlohmann::json final_eval_record(const EvalMetrics& e, int world_size = 1);
// A curriculum change after ch.step ("segments": the new count).
nlohmann::json curriculum_record(const CurriculumChange& ch, int world_size = 1);
// A probe recording at `step`: its summary (core/train/recorder.h summarize_recording) and,
// when scored_tokens > 0, the loss over the tokens the task scores.
nlohmann::json probe_record(int64_t step, nlohmann::json summary, double scored_loss, int64_t scored_tokens);
// The run restarted at `step` from `checkpoint` ("" when it had none and starts again).
nlohmann::json resume_record(int64_t step, const std::string& checkpoint, int world_size);
// Training stopped at `step` (the step that failed or was not completed) for `message`.
nlohmann::json error_record(int64_t step, const std::string& message, int world_size = 1);

// Applies one more record to `log` (what parse_run_log does per record). Returns true when
// a "resume" record dropped earlier records (curves must be rebuilt, not appended to).
bool apply_run_record(RunLog& log, const nlohmann::json& record);
// Why a parsed metrics record cannot join the history ("" when it can), the same rules as the
// Python reader's record_problem (python/mnemoscope/session.py): not an object, a "type" that
// is not a string, for the stepped types (step, eval, probe, error, curriculum, resume) a
// "step" that is not an integer 0..2^63-1, an eval's "split" not a string, "final",
// "zero_memory" or a step's "non_finite" not true/false. Such a record is skipped and reported
// as a gap; apply_run_record ignores it.
std::string record_problem(const nlohmann::json& record);

// Follows a session another process may still be writing (the app watching `mnemoscope
// train`): each poll() reads only what was appended to metrics.log since the last one (a
// record still being written is picked up by a later poll) and lists traces/. Opens
// nothing for writing. Not thread-safe; poll from one thread.
class RunLogFollower {
 public:
  explicit RunLogFollower(std::string session_dir);
  ~RunLogFollower();
  // Returns true when the log or the list of recorded steps changed.
  bool poll();
  const RunLog& log() const { return log_; }
  const std::vector<int64_t>& trace_steps() const { return trace_steps_; }
  const std::string& dir() const { return dir_; }
  // Bumps when records were dropped (resume) or the log was cut: consumers rebuild.
  uint64_t epoch() const { return epoch_; }
  // Bumps on every change.
  uint64_t version() const { return version_; }
  // Where reading stopped, when it did: damage no later poll got past, or a torn tail that
  // stayed the same over two polls (a record being written is not reported). "" when none.
  const std::string& problem() const { return problem_; }

 private:
  std::string dir_;
  std::unique_ptr<io::Session> session_;  // opened read-only once its manifest exists
  RunLog log_;
  uint64_t offset_ = 0, epoch_ = 0, version_ = 0;
  std::vector<int64_t> trace_steps_;
  std::string problem_;
  int64_t last_step_ = -1;          // step of the last record read that had one (file order)
  uint64_t tail_seen_ = ~uint64_t{0};  // file size when the current tail was first seen
};

}  // namespace mnemo
