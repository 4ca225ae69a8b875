#include "core/train/train_config.h"

#include "core/data/qa_options.h"
#include "core/io/json_file.h"
#include "core/train/rollout.h"
#include "core/train/schedule.h"

#include <sstream>

namespace mnemo {

namespace {
constexpr int64_t kManySteps = int64_t{1} << 40;
constexpr double kManySeconds = 1e9;

bool rule_accuracy(const CurriculumConfig& c) { return c.rule == "accuracy"; }
bool rule_every(const CurriculumConfig& c) { return c.rule == "every"; }
}  // namespace

// ---- curriculum ----

const ConfigFields<CurriculumConfig>& CurriculumConfig::fields() {
  using C = CurriculumConfig;
  static const ConfigFields<CurriculumConfig> table(
      "train.curriculum.",
      {int_field("start", &C::start, 0, 4096, "segments at step 0; 0 = the task's segments"),
       int_field("max", &C::max, 0, 4096, "the last count; 0 = start"),
       string_field("rule", &C::rule, {"accuracy", "every"}, "when a segment is added: accuracy | every"),
       real_field("threshold", &C::threshold, {0.0, 1.0}, "rule accuracy: valid per-character accuracy that adds a segment")
           .when(rule_accuracy),
       int_field("min_steps", &C::min_steps, 0, kManySteps, "rule accuracy: steps at a count before the next may be added")
           .when(rule_accuracy),
       int_field("every", &C::every, 0, kManySteps, "rule every: steps between additions (>= 1)").when(rule_every)});
  return table;
}

void CurriculumConfig::validate() const {
  if (!enabled) return;
  fields().validate(*this);
  if (start > 0 && max > 0 && max < start)
    throw field_error("train.curriculum.max", "= " + std::to_string(max) + " is below 'start' = " + std::to_string(start));
  if (rule == "every" && every < 1)
    throw field_error("train.curriculum.every", "= " + std::to_string(every) + " must be >= 1 with rule \"every\"");
}

nlohmann::json CurriculumConfig::to_json() const {
  if (!enabled) return nullptr;
  return fields().to_json(*this);
}

CurriculumConfig CurriculumConfig::from_json(const nlohmann::json& j) {
  CurriculumConfig c;
  if (j.is_null()) return c;
  if (!j.is_object())
    throw field_error("train.curriculum", "must be a JSON object, e.g. {\"start\": 2, \"max\": 6, \"rule\": \"accuracy\", "
                                          "\"threshold\": 0.99}");
  c.enabled = true;
  fields().read(c, j);
  c.validate();
  return c;
}

// ---- train ----

const ConfigFields<TrainConfig>& TrainConfig::fields() {
  using T = TrainConfig;
  static const ConfigFields<TrainConfig> table(
      "train.",
      {int_field("steps", &T::steps, 1, kManySteps, "optimizer steps of the whole run"),
       int_field("batch", &T::batch, 1, 1 << 20, "examples per step"),
       real_field("lr", &T::lr, {0.0, 10.0, true, false}, "peak learning rate"),
       int_field("warmup", &T::warmup, 0, kManySteps, "linear warm-up steps"),
       string_field("schedule", &T::schedule, known_schedules(), "decay after the warm-up: constant | linear | cosine"),
       real_field("min_lr_ratio", &T::min_lr_ratio, {0.0, 1.0}, "decay floor as a fraction of lr"),
       real_field("weight_decay", &T::weight_decay, {0.0, 10.0}, "AdamW decoupled weight decay (matrices only)"),
       real_field("clip", &T::clip, {0.0, kManySeconds}, "max global gradient norm; 0 = no clipping"),
       int_field("bptt_depth", &T::bptt_depth, -1, 1 << 20, "segments gradients flow back through memory; -1 = all"),
       string_field("strategy", &T::strategy, known_strategies(), "bptt | checkpoint | mrbp (core/train/rollout.h)"),
       int_field("eval_every", &T::eval_every, 0, kManySteps, "steps between evaluations on the valid split; 0 = never"),
       int_field("eval_batches", &T::eval_batches, -1, 1 << 30, "batches per evaluation; -1 = the whole split"),
       int_field("save_every", &T::save_every, 0, kManySteps, "steps between checkpoints; 0 = none by step count"),
       bool_field("save_at_eval", &T::save_at_eval, "a checkpoint after every evaluation as well"),
       real_field("save_every_seconds", &T::save_every_seconds, {0.0, kManySeconds},
                  "a checkpoint whenever this much wall time passed since the last; 0 = never"),
       int_field("record_every", &T::record_every, 0, kManySteps, "steps between probe recordings; 0 = never"),
       int_field("record_segments", &T::record_segments, 1, 64, "at most this many segments of the probe document"),
       int_field("record_example", &T::record_example, 0, 1 << 30,
                 "the test example the probe recordings step (below the test split's size)")
           .when([](const TrainConfig& c) { return c.record_example != 0; }),  // configs written before it stay byte for byte
       bool_field("eval_zero_memory", &T::eval_zero_memory, "every evaluation also runs with the memory zeroed"),
       object_field<TrainConfig>(
           "curriculum", [](TrainConfig& c, const nlohmann::json& v) { c.curriculum = CurriculumConfig::from_json(v); },
           [](const TrainConfig& c) { return c.curriculum.to_json(); }, "a curriculum over task.segments")
           .when([](const TrainConfig& c) { return c.curriculum.enabled; }),
       seed_field("seed", &T::seed, "model initialisation")});
  return table;
}

void TrainConfig::validate() const {
  fields().validate(*this);
  if (strategy != "bptt" && bptt_depth != -1)
    throw field_error("train.strategy", "= '" + strategy + "' always back-propagates through every segment; set " +
                                            "'train.bptt_depth' to -1 or use \"bptt\"");
  if (eval_batches == 0) throw field_error("train.eval_batches", "= 0; use >= 1, or -1 for the whole split");
  curriculum.validate();
}

nlohmann::json TrainConfig::to_json() const { return fields().to_json(*this); }

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw field_error("train", "must be a JSON object, got " + std::string(j.type_name()));
  TrainConfig c;
  fields().read(c, j);
  c.validate();
  return c;
}

// ---- the whole config ----

void TrainingConfig::validate() const {
  try {
    model.validate();
  } catch (const ConfigError& e) {
    throw nested_error(e, "model");
  }
  train.validate();
  auto t = make_task();
  auto check_len = [&](const TaskSource& task, const std::string& what) {
    if (model.segment_len < task.segment_len())
      throw field_error("model.segment_len", "= " + std::to_string(model.segment_len) + " is shorter than the " +
                                                 "task's segments" + what + ": " + task.name() + " examples of " +
                                                 std::to_string(task.length()) + " tokens in " +
                                                 std::to_string(task.segments()) + " segments need " +
                                                 std::to_string(task.segment_len()));
  };
  const auto& cu = train.curriculum;
  if (!cu.enabled) {
    check_len(*t, "");
    return;
  }
  const int64_t first = cu.start > 0 ? cu.start : t->segments();
  const int64_t last = cu.max > 0 ? cu.max : first;
  if (last < first)
    throw field_error("train.curriculum.max", "= " + std::to_string(last) + " is below the start (" +
                                                  std::to_string(first) + " segments)");
  for (int64_t n = first; n <= last; ++n) {
    std::shared_ptr<TaskSource> tn;
    try {
      tn = mnemo::make_task(task_with_segments(task, n));
    } catch (const ConfigError& e) {
      throw ConfigError("config field 'train.curriculum': the task with " + std::to_string(n) + " segments is invalid: " +
                            e.what(),
                        "train.curriculum");
    }
    check_len(*tn, " at curriculum count " + std::to_string(n));
  }
}

nlohmann::json task_with_segments(const nlohmann::json& task, int64_t segments) {
  nlohmann::json t = task;
  t["segments"] = segments;
  return t;
}

std::shared_ptr<TaskSource> TrainingConfig::make_task() const { return mnemo::make_task(task); }

nlohmann::json TrainingConfig::to_json() const {
  nlohmann::json j = {{"model", model.to_json()}, {"task", make_task()->to_json()}, {"train", train.to_json()}};
  if (!description.empty()) j["description"] = description;
  return j;
}

TrainingConfig TrainingConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("training config must be a JSON object, got " + std::string(j.type_name()));
  TrainingConfig c;
  bool has_model = false, has_task = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "description") {
      if (!it.value().is_string()) throw field_error("description", "must be a string");
      c.description = it.value().get<std::string>();
    } else if (k == "model") {
      if (!it.value().is_object())
        throw field_error("model", "must be a JSON object, got " + std::string(it.value().type_name()));
      try {
        c.model = ModelConfig::from_json(it.value());
      } catch (const ConfigError& e) {
        throw nested_error(e, "model");
      }
      has_model = true;
    } else if (k == "task") {
      c.task = mnemo::make_task(it.value())->to_json();
      has_task = true;
    } else if (k == "train") {
      c.train = TrainConfig::from_json(it.value());
    } else {
      throw field_error(k, "is unknown; a training config has model, task, train, description");
    }
  }
  if (!has_model) throw field_error("model", "is missing; add the model config object");
  if (!has_task) throw field_error("task", "is missing; add e.g. \"task\": {\"name\": \"copy\"}");
  c.validate();
  return c;
}

TrainingConfig TrainingConfig::load(const std::string& path) {
  const nlohmann::json j = io::read_json_config(path);
  try {
    return from_json(j);
  } catch (const ConfigError& e) {
    throw error_in("config file '" + path + "': ", e);
  }
}

// ---- --set ----

void apply_config_set(nlohmann::json& config, const std::string& key, const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  nlohmann::json value;
  if (parts.size() == 2 && parts[0] == "model")
    value = ConfigFields<ModelConfig>::set_value(ModelConfig::fields().find(parts[1]), text);
  else if (parts.size() == 2 && parts[0] == "train")
    value = ConfigFields<TrainConfig>::set_value(TrainConfig::fields().find(parts[1]), text);
  else if (parts.size() == 3 && parts[0] == "train" && parts[1] == "curriculum")
    value = ConfigFields<CurriculumConfig>::set_value(CurriculumConfig::fields().find(parts[2]), text);
  else if (key == "description")
    value = text;
  else
    value = ConfigFields<TrainConfig>::set_value(nullptr, text);  // the task's fields: JSON, else a string
  std::string pointer;
  for (const auto& p : parts) pointer += "/" + p;
  try {
    config[nlohmann::json::json_pointer(pointer)] = value;
  } catch (const nlohmann::json::exception& e) {
    throw field_error(key, std::string("cannot be set: ") + e.what());
  }
}

nlohmann::json config_schema() {
  return {{"schema_version", 1},
          {"model", ModelConfig::fields().schema(ModelConfig{})},
          {"train", TrainConfig::fields().schema(TrainConfig{})},
          {"train.curriculum", CurriculumConfig::fields().schema(CurriculumConfig{})},
          {"task", TaskConfig::fields().schema(TaskConfig{})},
          {"task (qa)", QaTaskOptions::fields().schema(QaTaskOptions{})}};
}

}  // namespace mnemo
