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
//                "record_every": 100, "record_segments": 8, "seed": 0 }
//   }
// "model" and "task" are required, "train" fields default as in TrainConfig. Unknown keys
// and bad values throw ConfigError naming the field ("train.lr", "task.segments", ...).
// model.segment_len must be at least the task's segment length ceil(length / segments).
//
// Threads: a Trainer is driven by one thread (e.g. a worker); run() calls the callbacks on
// that thread and polls the stop flag between steps, so another thread (UI, SIGINT handler)
// stops it by setting the flag. Nothing is printed.
#pragma once
#include "core/data/tasks.h"
#include "core/models/config.h"
#include "core/models/model.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics.h"
#include "core/train/optim.h"
#include "core/train/rollout.h"
#include "core/train/schedule.h"

#include <atomic>
#include <functional>
#include <memory>

namespace mnemo {

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
  int64_t save_every = 0;        // steps between checkpoints (the caller saves); 0 = never
  int64_t record_every = 100;    // steps between probe recordings (the caller records, core/train/recorder.h); 0 = never
  int64_t record_segments = 8;   // at most this many segments of the probe document (1..64)
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
};

struct EvalMetrics {
  int64_t step = 0;
  Split split = Split::kValid;
  double loss = 0, accuracy = 0, exact_match = 0;
  double bits_per_token = 0, perplexity = 0;  // from loss (nats per predicted token); MNIST: bits per pixel
  double tokens = 0;                          // predicted tokens the loss averages over
  int64_t examples = 0;
  double chars = 0;
};

struct EvalOptions {
  int64_t batches = -2;       // -2: the config's eval_batches; -1: the whole split
  bool zero_memory = false;   // ablation: every memory tensor zeroed between segments
};

struct TrainCallbacks {
  std::function<void(const StepMetrics&)> on_step;
  std::function<void(const EvalMetrics&)> on_eval;
  std::function<void(int64_t step)> on_save;  // every save_every steps; the caller writes the checkpoint
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
  const TaskSource& task() const { return *task_; }
  MemoryModel model() const { return model_; }
  int64_t step() const { return step_; }
  double learning_rate() const;  // for the next step

  // One optimizer step on the next training batch (examples step*batch .. +batch-1).
  // A non-finite loss or gradient norm skips the update (weights unchanged) and sets
  // non_finite; step() does not advance then.
  StepMetrics train_step();
  EvalMetrics evaluate(Split split, const EvalOptions& opt = {});
  // Steps until train.steps, the stop flag, or a non-finite loss. Evaluates on the valid
  // split every eval_every steps and calls on_save every save_every steps.
  TrainOutcome run(const TrainCallbacks& cb = {}, const std::atomic<bool>* stop = nullptr);

  // Weights + optimizer state + step + config.
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
};

// Forward-only evaluation of `model` on `batches` batches (-1 = all) of `batch` examples
// of a split (the first ones, in order): loss, per-character accuracy and exact match on
// scored positions.
ScoreTotals evaluate_model(MemoryModelImpl& model, const TaskSource& task, Split split, int64_t batches, int64_t batch,
                           bool zero_memory = false);

}  // namespace mnemo
