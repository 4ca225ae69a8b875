// A training session's metrics.log read back as curves (docs/formats.md#sessions; written by
// `mnemoscope train`, app/commands/train.cpp). Record types:
//   {"type":"step",  "step", "loss", "accuracy", "lr", "grad_norm", "tokens_per_s", "seconds",
//                    "peak_rss_mib", ["non_finite": true]}
//   {"type":"eval",  "step", "split", "loss", "accuracy", "exact_match", ...["final": true]}
//   {"type":"probe", "step", "loss", "slot_types", "forget_norm", "rmt_block_mass", "hash_entropy"}
//   {"type":"eval", ..., "zero_memory": true}  the same evaluation with the memory zeroed
//   {"type":"curriculum", "step", "from", "to", "segments", "reason"}  a curriculum change after step
//   {"type":"resume","step"}   training restarted from the checkpoint of this step
//   {"type":"error", "step", "message"}
// NaN/Inf numbers are stored as JSON null and come back as NaN. A "resume" record drops the
// step/eval/probe records of steps after its step that were written before it (the steps a
// crash lost and the resumed run does again), so the curves are continuous.
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
}

struct Curve {
  std::string name;
  std::vector<double> x;  // training step, non-decreasing
  std::vector<double> y;  // NaN where the value was NaN/Inf (null in the log)
};

// Name of the valid curve evaluated with the memory zeroed (in "loss", "accuracy", "perplexity").
inline constexpr const char* kValidZeroMemoryCurve = "valid, memory zeroed";

struct RunLog {
  std::vector<nlohmann::json> steps, evals, probes, errors, curricula;
  int64_t resumes = 0;

  // Named curves over training steps. `name` is one of curve_names(); unknown names throw
  // std::invalid_argument listing the known ones. A name may give several curves (train and
  // valid loss, and "valid, memory zeroed" when recorded; one per slot type; one per RMT
  // layer and block; "segments": the curriculum's count as a step function). Empty when the
  // log has no such data.
  std::vector<Curve> curves(const std::string& name) const;
  static const std::vector<std::string>& curve_names();
  int64_t last_step() const;  // highest step of any record (-1 when none)
  // The curriculum's changes in step order (what charts mark with a vertical line).
  struct CurriculumMark {
    int64_t step = 0, from = 0, to = 0;
    std::string reason;
  };
  std::vector<CurriculumMark> curriculum_marks() const;
};

RunLog parse_run_log(const std::vector<nlohmann::json>& records);

// The "step" record of one optimizer step, as `mnemoscope train` appends it (NaN/Inf become
// null; a non-finite step is marked and carries the number of the step that failed).
struct StepMetrics;
nlohmann::json step_record(const StepMetrics& m, double peak_rss_mib);
// The "eval" record of one evaluation (add "final": true for the end-of-run ones).
struct EvalMetrics;
nlohmann::json eval_record(const EvalMetrics& e);
// Applies one more record to `log` (what parse_run_log does per record). Returns true when
// a "resume" record dropped earlier records (curves must be rebuilt, not appended to).
bool apply_run_record(RunLog& log, const nlohmann::json& record);

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
  // Where reading stopped, when it did (a damaged record no later poll can get past).
  const std::string& problem() const { return problem_; }

 private:
  std::string dir_;
  std::unique_ptr<io::Session> session_;  // opened read-only once its manifest exists
  RunLog log_;
  uint64_t offset_ = 0, epoch_ = 0, version_ = 0;
  std::vector<int64_t> trace_steps_;
  std::string problem_;
};

}  // namespace mnemo
