// Trainer: every model of the project trained on a task with AdamW, warm-up + decay,
// gradient clipping and BPTT depth k through the shared rollout (core/train/rollout.h).
// Its config is a TrainingConfig (core/train/train_config.h: the JSON of sessions/*.json);
// evaluation is core/train/evaluate.h.
//
// Threads: a Trainer is driven by one thread (e.g. a worker); run() calls the callbacks on
// that thread and polls the stop flag between steps, so another thread (UI, SIGINT handler)
// stops it by setting the flag. Nothing is printed.
#pragma once
#include "core/data/tasks.h"
#include "core/models/config.h"
#include "core/models/model.h"
#include "core/train/checkpoint.h"
#include "core/train/evaluate.h"
#include "core/train/metrics.h"
#include "core/train/optim.h"
#include "core/train/rollout.h"
#include "core/train/schedule.h"
#include "core/train/train_config.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace mnemo {

namespace dist {
class ProcessGroup;
}

// One optimizer step.
struct StepMetrics {
  int64_t step = 0;          // steps done after this one (1-based)
  double loss = 0;           // training loss J of the batch (token-weighted mean)
  double accuracy = 0;       // per-character accuracy of the batch on scored positions
  double lr = 0;             // learning rate used
  double grad_norm = 0;      // global gradient norm before clipping
  double tokens_per_s = 0;   // input tokens (batch x example length) per second of this step
  double seconds = 0;        // wall time of this step
  bool non_finite = false;   // loss or gradient norm was NaN/Inf: no update was made
  // Data parallel (set_process_group): the group's size, and per rank the seconds of its
  // forward/backward before the gradient allreduce and its tokens/s over them; the
  // allreduce's seconds on this rank. One process: world_size 1, the vectors empty.
  int world_size = 1;
  std::vector<double> rank_seconds, rank_tokens_per_s;
  double allreduce_seconds = 0;
  bool stop_agreed = false;  // some rank's stop flag was set: every rank stops after this step
};

struct EvalOptions {
  int64_t batches = -2;       // -2: the config's eval_batches; -1: the whole split
  bool zero_memory = false;   // ablation: every memory tensor zeroed between segments
};

// A curriculum change: from `from` to `to` segments after step `step`.
struct CurriculumChange {
  int64_t step = 0, from = 0, to = 0;
  std::string reason;  // e.g. "valid accuracy 0.9931 >= 0.99" or "every 500 steps"
};

struct TrainCallbacks {
  std::function<void(const StepMetrics&)> on_step;
  // Every evaluation: the valid split, then (eval_zero_memory, models with memory) the same
  // with the memory zeroed.
  std::function<void(const EvalMetrics&)> on_eval;
  std::function<void(const CurriculumChange&)> on_curriculum;
  // After a step that is due a checkpoint (save_every, an evaluation with save_at_eval, or
  // save_every_seconds since the run started or the last on_save); the caller writes it.
  std::function<void(int64_t step)> on_save;
};

struct TrainOutcome {
  int64_t steps_done = 0;
  bool stopped = false;     // the stop flag ended the run early
  bool non_finite = false;  // a NaN/Inf loss or gradient ended it
  std::string message;      // e.g. "loss is NaN at step 12"
};

class Trainer {
 public:
  // Builds the task, the model (seed train.seed) and the optimizer. Throws ConfigError.
  explicit Trainer(TrainingConfig cfg, torch::Device device = torch::kCPU);

  const TrainingConfig& config() const { return cfg_; }
  // The task at the current curriculum count (rebuilt when the curriculum moves: take the
  // reference again after a step; earlier tasks stay alive as long as the Trainer).
  const TaskSource& task() const { return *task_; }
  int64_t segments() const { return segments_; }  // current curriculum count (the task's segments)
  // The memory-zeroed evaluation applies: the model carries a memory between segments.
  bool has_memory() const;
  MemoryModel model() const { return model_; }
  int64_t step() const { return step_; }
  double learning_rate() const;  // for the next step

  // One optimizer step on the next training batch (examples step*batch .. +batch-1).
  // A non-finite loss or gradient norm skips the update (weights unchanged) and sets
  // non_finite; step() does not advance then.
  StepMetrics train_step();
  // Throws ConfigError when the task cannot train the model: a model that predicts the next
  // segment (Memformer) on a task that gives a segment none (copy, reverse, ...), where every
  // rollout would fail. `train` asks before it writes anything; building a Trainer does not
  // (probes and replays use a Trainer's model on such tasks without training it).
  void check_trainable() const;
  EvalMetrics evaluate(Split split, const EvalOptions& opt = {});
  // Steps until train.steps, the stop flag, or a non-finite loss. Evaluates on the valid
  // split every eval_every steps (and with memory zeroed), moves the curriculum, and calls
  // on_save every save_every steps.
  TrainOutcome run(const TrainCallbacks& cb = {}, const std::atomic<bool>* stop = nullptr);

  // Moves the curriculum by its rule after a step (rule every) or an evaluation (rule
  // accuracy; pass it). Returns the change, if any (run() calls this itself).
  std::optional<CurriculumChange> advance_curriculum(const EvalMetrics* valid);
  // Sets the segment count (tests, restore); rebuilds the task. ConfigError outside start..max.
  void set_segments(int64_t segments, int64_t since_step);

  // Data parallel over `pg` (docs/training.md#distributed; not owned, nullptr = one process).
  // Each step, rank r of N trains on examples [r*B/N, (r+1)*B/N) of the global batch
  // (B = train.batch, the same global batch as one process), and one flattened allreduce
  // sums the token-weighted gradients and the loss/accuracy counts, so clipping and AdamW
  // see exactly the gradient of the global batch on every rank. Evaluations are shared: rank
  // r scores batches r, r+N, ... and one allreduce sums the totals, so every rank gets the
  // whole split's result (and a curriculum moves everywhere at once). A stop flag set on
  // any rank stops every rank after the same step (StepMetrics::stop_agreed).
  // Every rank must call train_step / evaluate / run alike; set_process_group(nullptr)
  // detaches (e.g. rank 0 evaluating alone after the others left).
  // ConfigError when train.batch < the world size. Collectives throw dist::PeerError. A group
  // of one rank is used as given (its collectives run: `bench distributed --device cuda`
  // measures NCCL's overhead that way); one process trains without a group (nullptr).
  void set_process_group(dist::ProcessGroup* pg);
  dist::ProcessGroup* process_group() const { return pg_; }
  // Makes every rank's weights, optimizer state, step and curriculum count rank 0's (a
  // broadcast; call on every rank after rank 0 restored a checkpoint, and at the start).
  void sync_from_rank0();

  // Weights + optimizer state + step + config (+ curriculum state).
  Checkpoint checkpoint() const;
  // Restores a checkpoint of the same model config (ConfigError naming the tensor or field
  // otherwise); the step continues from the checkpoint's.
  void restore(const Checkpoint& ckpt, const std::string& source);

 private:
  TrainingConfig cfg_;
  std::shared_ptr<TaskSource> task_;
  torch::Device device_;
  MemoryModel model_;
  std::unique_ptr<torch::optim::AdamW> opt_;
  int64_t step_ = 0;
  int64_t segments_ = 0;         // current task segments
  int64_t curriculum_since_ = 0; // step of the last curriculum change (or 0)
  std::vector<std::shared_ptr<TaskSource>> old_tasks_;  // keeps references from task() valid
  dist::ProcessGroup* pg_ = nullptr;
  const std::atomic<bool>* stop_flag_ = nullptr;  // run()'s, read by train_step when distributed
};

}  // namespace mnemo
