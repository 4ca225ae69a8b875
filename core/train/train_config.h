// Training configs: what a training run is (model, task, optimisation), read from JSON with
// the field tables of core/io/config_fields.h and written back byte for byte as sessions and
// checkpoints record it.
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
// and bad values throw ConfigError naming the field ("train.lr", "task.segments", ...; its
// field() is that path). model.segment_len must be at least the task's segment length
// ceil(length / segments).
#pragma once
#include "core/data/tasks.h"
#include "core/io/config_fields.h"
#include "core/models/config.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace mnemo {

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
  bool enabled = false;       // the "curriculum" object is there (not a field of its own)
  int64_t start = 0;          // segments at step 0; 0 = the task's segments
  int64_t max = 0;            // the last count; 0 = start
  std::string rule = "accuracy";  // accuracy | every
  double threshold = 0.99;    // rule accuracy: valid per-character accuracy that adds a segment
  int64_t min_steps = 0;      // rule accuracy: steps at a count before the next may be added
  int64_t every = 0;          // rule every: steps between additions (>= 1)

  // The field table (prefix "train.curriculum."); core/train/train_config.cpp.
  static const ConfigFields<CurriculumConfig>& fields();
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
  int64_t record_example = 0;    // the test example the probe recordings step (0..test split size - 1)
  bool eval_zero_memory = true;  // every evaluation also runs with the memory zeroed (models with memory)
  CurriculumConfig curriculum;   // over task.segments; off unless given
  uint64_t seed = 0;             // model initialisation

  // The field table (prefix "train."); core/train/train_config.cpp.
  static const ConfigFields<TrainConfig>& fields();
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

// One `--set KEY=TEXT` on a training config's JSON: KEY is a dotted path of object keys
// ("train.lr", "task.segments"), created where missing. TEXT is read as the field's kind
// (ConfigFields::set_value) where KEY names a model, train or curriculum field; elsewhere
// (the task's fields, description) as JSON, else as a string. The result is not checked:
// TrainingConfig::from_json does that. ConfigError (field() = KEY) when KEY runs through a
// value that is not an object.
void apply_config_set(nlohmann::json& config, const std::string& key, const std::string& text);

// Every config field table as data, for other languages and tools: {"schema_version": 1,
// "model": rows of ModelConfig::fields(), "train": TrainConfig's, "train.curriculum":
// CurriculumConfig's, "task": TaskConfig's (the synthetic tasks' shared fields), "task (qa)":
// QaTaskOptions'}, each row as ConfigFields::schema describes it, defaults from the structs'
// initialisers. `mnemoscope info --config-schema` prints it; python/mnemoscope/config_schema.json
// is its copy (tests/CMakeLists.txt config_schema_in_sync keeps the two equal).
nlohmann::json config_schema();

// The training config with task.segments set to `segments` (what a curriculum trains on).
nlohmann::json task_with_segments(const nlohmann::json& task, int64_t segments);

}  // namespace mnemo
