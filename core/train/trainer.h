// Trainer: every model of the project trained on a task with AdamW, warm-up + decay,
// gradient clipping and BPTT depth k through the shared rollout (core/train/rollout.h).
//
// Training config JSON (sessions/*.json):
//   {
//     "description": "optional free text",
//     "model": { ...ModelConfig (core/models/config.h)... },
//     "task":  { "name": "copy", "source_len": 24, "segments": 2, ... (core/data/tasks.h make_task) },
//     "train": { "steps": 2000, "batch": 32, "lr": 1e-3, "warmup": 100, "schedule": "cosine",
//                "min_lr_ratio": 0.0, "weight_decay": 0.01, "clip": 1.0, "bptt_depth": -1,
//                "strategy": "bptt", "eval_every": 200, "eval_batches": 4, "save_every": 500,
//                "record_every": 100, "record_segments": 8, "eval_zero_memory": true,
//                "curriculum": { ...CurriculumConfig... }, "seed": 0 }
//   }
// "model" and "task" are required, "train" fields default as in TrainConfig. Unknown keys
// and bad values throw ConfigError naming the field ("train.lr", "task.segments", ...).
// model.segment_len must be at least the task's segment length ceil(length / segments).
//
// Evaluation (evaluate_model, eval_metrics) is core/train/evaluate.h.
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

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace mnemo {

namespace dist {
class ProcessGroup;
}

// A curriculum over the number of segments (the practice of the RMT line of work: train
// on few segments, add one when the model copes). The task is rebuilt with `segments` =
// the current count; everything else (model, data order, schedule) stays as it is.
//   "curriculum": {"start": 2, "max": 6, "rule": "accuracy", "threshold": 0.99, "min_steps": 0}
//   "curriculum": {"start": 2, "max": 6, "rule": "every", "every": 500}
// rule "accuracy": after a valid evaluation (train.eval_every) whose per-character accuracy
// is >= threshold, one segment is added (if at least min_steps steps were trained at the
// current count); rule "every": one is added after every `every`-th step (step % every == 0).
// The current count and the step of the last change travel in the checkpoint's metadata
// ("segments", "curriculum_since"), so --resume continues where the curriculum was.
struct CurriculumConfig {
  bool enabled = false;
  int64_t start = 0;          // segments at step 0; 0 = the task's segments
  int64_t max = 0;            // the last count; 0 = start
  std::string rule = "accuracy";  // accuracy | every
  double threshold = 0.99;    // rule accuracy: valid per-character accuracy that adds a segment
  int64_t min_steps = 0;      // rule accuracy: steps at a count before the next may be added
  int64_t every = 0;          // rule every: steps between additions (>= 1)

  void validate() const;  // ConfigError naming "train.curriculum.<field>"
  nlohmann::json to_json() const;  // null when not enabled
  static CurriculumConfig from_json(const nlohmann::json& j);
};

struct TrainConfig {
  int64_t steps = 1000;          // optimizer steps of the whole run
  int64_t batch = 32;            // examples per step
  double lr = 1e-3;              // peak learning rate
  int64_t warmup = 100;          // linear warm-up steps
  std::string schedule = "cosine";  // constant | linear | cosine (after warm-up)
  double min_lr_ratio = 0.0;     // decay floor as a fraction of lr
  double weight_decay = 0.01;    // AdamW decoupled weight decay (matrices only)
  double clip = 1.0;             // max global gradient norm; 0 = no clipping
  int64_t bptt_depth = -1;       // segments gradients flow back through memory; -1 = all
  std::string strategy = "bptt";  // bptt | checkpoint | mrbp (core/train/rollout.h); the last two need bptt_depth -1
  int64_t eval_every = 200;      // steps between evaluations on the valid split; 0 = never
  int64_t eval_batches = 4;      // batches per evaluation; -1 = the whole split
  int64_t save_every = 0;        // steps between checkpoints (the caller saves); 0 = none by step count
  bool save_at_eval = true;      // a checkpoint after every evaluation (eval_every) as well
  double save_every_seconds = 600;  // and one whenever this much wall time passed since the last; 0 = never
  int64_t record_every = 100;    // steps between probe recordings (the caller records, core/train/recorder.h); 0 = never
  int64_t record_segments = 8;   // at most this many segments of the probe document (1..64)
  bool eval_zero_memory = true;  // every evaluation also runs with the memory zeroed (models with memory)
  CurriculumConfig curriculum;   // over task.segments; off unless given
  uint64_t seed = 0;             // model initialisation

  void validate() const;  // ConfigError naming "train.<field>"
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);
};

struct TrainingConfig {
  std::string description;
  ModelConfig model;
  nlohmann::json task = {{"name", "copy"}};  // normalised by make_task (core/data/tasks.h)
  TrainConfig train;

  // Builds the task (make_task) or throws ConfigError naming the field.
  std::shared_ptr<TaskSource> make_task() const;
  void validate() const;  // each part, plus model.segment_len vs the task
  nlohmann::json to_json() const;
  static TrainingConfig from_json(const nlohmann::json& j);
  // Reads a JSON file; ConfigError names the file and the field.
  static TrainingConfig load(const std::string& path);
};

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

// The training config with task.segments set to `segments` (what a curriculum trains on).
nlohmann::json task_with_segments(const nlohmann::json& task, int64_t segments);

}  // namespace mnemo
