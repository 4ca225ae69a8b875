// Evaluation: forward-only scoring of a model on a task's split (loss, per-character
// accuracy, exact match and the task's own metrics), as the Trainer evaluates during a run
// (core/train/trainer.h) and `mnemoscope eval` evaluates a checkpoint; and what a step's
// predictions are scored against, which training shares.
#pragma once
#include "core/data/tasks.h"
#include "core/models/model.h"
#include "core/train/metrics.h"

#include <map>
#include <string>
#include <vector>

namespace mnemo {

struct EvalMetrics {
  int64_t step = 0;
  Split split = Split::kValid;
  bool zero_memory = false;   // the ablation run: memory zeroed between segments
  int64_t segments = 0;       // segments per example of the task evaluated (curriculum)
  double loss = 0, accuracy = 0, exact_match = 0;
  double bits_per_token = 0, perplexity = 0;  // from loss (nats per predicted token); MNIST: bits per pixel
  double tokens = 0;                          // predicted tokens the loss averages over
  int64_t examples = 0;
  int64_t split_examples = 0;  // examples in the split; more than `examples` when only its first ones were scored
  double chars = 0;
  std::map<std::string, double> extra;        // the task's own metrics (TaskSource::finish_metrics)
};

// Forward-only evaluation of `model` on `batches` batches (-1 = all) of `batch` examples
// of a split (the first ones, in order): loss, per-character accuracy and exact match on
// scored positions.
// zero_memory: every floating-point memory tensor is zeroed before each segment but the
// first; integer ones (indices, e.g. MTN's "source", -1 = empty) are reset to the initial
// memory's, so the model sees an empty memory rather than one pointing at token 0.
// shard/shards: only the batches whose index i has i % shards == shard (a rank's share of a
// distributed evaluation; the totals of all shards are those of the whole).
// by_position: also the scored losses by segment index and position (PositionLosses).
// reset_memory: every memory tensor set back to the initial memory before each segment but
// the first (what the model holds at the start of a document: no earlier text, and nothing
// it never saw in training, unlike zeros where the initial memory is learnt).
ScoreTotals evaluate_model(MemoryModelImpl& model, const TaskSource& task, Split split, int64_t batches, int64_t batch,
                           bool zero_memory = false, int64_t shard = 0, int64_t shards = 1,
                           PositionLosses* by_position = nullptr, bool reset_memory = false);

// The evaluation record of `s` (task metrics finished by `task`), as the trainer logs it and
// `mnemoscope eval` prints it.
EvalMetrics eval_metrics(const ScoreTotals& s, const TaskSource& task, int64_t step, Split split, bool zero_memory);

// Scoring, shared by training and evaluation. A model predicts the next segment
// (Memformer's decoder) or within-segment targets (every other kind; core/models/config.h
// LossTarget); a batch may fill both (the data-set tasks of core/data/lm_tasks.h).
bool predicts_next_segment(const MemoryModelImpl& model);
// What the logits of segment `in` predict.
torch::Tensor score_target(const SegmentInput& in, bool next);
// The scored positions of every segment of `tb` (TaskBatch::scored where the task gives them).
std::vector<torch::Tensor> score_masks(const TaskBatch& tb, bool next);

}  // namespace mnemo
