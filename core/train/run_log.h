// A training session's metrics.log read back as curves (DESIGN §4; written by
// `mnemoscope train`, app/cmd_train.cpp). Record types:
//   {"type":"step",  "step", "loss", "accuracy", "lr", "grad_norm", "tokens_per_s", "seconds",
//                    "peak_rss_mib", ["non_finite": true]}
//   {"type":"eval",  "step", "split", "loss", "accuracy", "exact_match", ...["final": true]}
//   {"type":"probe", "step", "loss", "slot_types", "forget_norm", "rmt_block_mass", "hash_entropy"}
//   {"type":"resume","step"}   training restarted from the checkpoint of this step
//   {"type":"error", "step", "message"}
// NaN/Inf numbers are stored as JSON null and come back as NaN. A "resume" record drops the
// step/eval/probe records of steps after its step that were written before it (the steps a
// crash lost and the resumed run does again), so the curves are continuous.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace mnemo {

struct Curve {
  std::string name;
  std::vector<double> x;  // training step, non-decreasing
  std::vector<double> y;  // NaN where the value was NaN/Inf (null in the log)
};

struct RunLog {
  std::vector<nlohmann::json> steps, evals, probes, errors;
  int64_t resumes = 0;

  // Named curves over training steps. `name` is one of curve_names(); unknown names throw
  // std::invalid_argument listing the known ones. A name may give several curves (train and
  // valid loss; one per slot type; one per RMT layer and block; ...). Empty when the log has
  // no such data.
  std::vector<Curve> curves(const std::string& name) const;
  static const std::vector<std::string>& curve_names();
  int64_t last_step() const;  // highest step of any record (-1 when none)
};

RunLog parse_run_log(const std::vector<nlohmann::json>& records);

}  // namespace mnemo
