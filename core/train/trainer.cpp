#include "core/train/trainer.h"

#include "core/io/json_file.h"

#include "core/dist/process_group.h"
#include "core/models/factory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace mnemo {

namespace {

void check_int(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw ConfigError("config field 'train." + std::string(field) + "' = " + std::to_string(v) + " is out of range " +
                      std::to_string(lo) + ".." + std::to_string(hi));
}

void check_real(const char* field, double v, double lo, double hi, bool lo_open = false) {
  if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
    std::ostringstream os;
    os << "config field 'train." << field << "' = " << v << " is out of range " << (lo_open ? "(" : "[") << lo << ", "
       << hi << "]";
    throw ConfigError(os.str());
  }
}

std::string number_label(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

// ---- config ----

void CurriculumConfig::validate() const {
  if (!enabled) return;
  auto field = [](const char* f) { return std::string("config field 'train.curriculum.") + f + "'"; };
  if (start < 0 || start > 4096) throw ConfigError(field("start") + " = " + std::to_string(start) + " is out of range 1..4096");
  if (max < 0 || max > 4096) throw ConfigError(field("max") + " = " + std::to_string(max) + " is out of range 1..4096");
  if (start > 0 && max > 0 && max < start)
    throw ConfigError(field("max") + " = " + std::to_string(max) + " is below 'start' = " + std::to_string(start));
  if (rule != "accuracy" && rule != "every")
    throw ConfigError(field("rule") + " = '" + rule + "' must be \"accuracy\" or \"every\"");
  if (!std::isfinite(threshold) || threshold < 0.0 || threshold > 1.0)
    throw ConfigError(field("threshold") + " = " + number_label(threshold) + " is out of range [0, 1]");
  if (min_steps < 0) throw ConfigError(field("min_steps") + " = " + std::to_string(min_steps) + " must be >= 0");
  if (rule == "every" && every < 1)
    throw ConfigError(field("every") + " = " + std::to_string(every) + " must be >= 1 with rule \"every\"");
  if (every < 0) throw ConfigError(field("every") + " = " + std::to_string(every) + " must be >= 0");
}

nlohmann::json CurriculumConfig::to_json() const {
  if (!enabled) return nullptr;
  nlohmann::json j = {{"start", start}, {"max", max}, {"rule", rule}};
  if (rule == "accuracy") {
    j["threshold"] = threshold;
    j["min_steps"] = min_steps;
  } else {
    j["every"] = every;
  }
  return j;
}

CurriculumConfig CurriculumConfig::from_json(const nlohmann::json& j) {
  CurriculumConfig c;
  if (j.is_null()) return c;
  if (!j.is_object())
    throw ConfigError("config field 'train.curriculum' must be a JSON object, e.g. {\"start\": 2, \"max\": 6, "
                      "\"rule\": \"accuracy\", \"threshold\": 0.99}");
  c.enabled = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto need_int = [&](int64_t& dst) {
      if (!v.is_number_integer())
        throw ConfigError("config field 'train.curriculum." + k + "' must be an integer, got " + v.dump());
      dst = v.get<int64_t>();
    };
    if (k == "start") need_int(c.start);
    else if (k == "max") need_int(c.max);
    else if (k == "min_steps") need_int(c.min_steps);
    else if (k == "every") need_int(c.every);
    else if (k == "threshold") {
      if (!v.is_number()) throw ConfigError("config field 'train.curriculum.threshold' must be a number, got " + v.dump());
      c.threshold = v.get<double>();
    } else if (k == "rule") {
      if (!v.is_string()) throw ConfigError("config field 'train.curriculum.rule' must be a string, got " + v.dump());
      c.rule = v.get<std::string>();
    } else {
      throw ConfigError("config field 'train.curriculum." + k + "' is unknown; known fields: start, max, rule, threshold, "
                        "min_steps, every");
    }
  }
  c.validate();
  return c;
}

void TrainConfig::validate() const {
  check_int("steps", steps, 1, int64_t{1} << 40);
  check_int("batch", batch, 1, 1 << 20);
  check_real("lr", lr, 0.0, 10.0, true);
  check_int("warmup", warmup, 0, int64_t{1} << 40);
  const auto& ks = known_schedules();
  if (std::find(ks.begin(), ks.end(), schedule) == ks.end())
    throw ConfigError("config field 'train.schedule' = '" + schedule + "' must be constant, linear or cosine");
  check_real("min_lr_ratio", min_lr_ratio, 0.0, 1.0);
  check_real("weight_decay", weight_decay, 0.0, 10.0);
  check_real("clip", clip, 0.0, 1e9);
  check_int("bptt_depth", bptt_depth, -1, 1 << 20);
  Strategy st = Strategy::kBptt;
  try {
    st = parse_strategy(strategy);
  } catch (const ConfigError&) {
    throw ConfigError("config field 'train.strategy' = '" + strategy + "' must be bptt, checkpoint or mrbp");
  }
  if (st != Strategy::kBptt && bptt_depth != -1)
    throw ConfigError("config field 'train.strategy' = '" + strategy + "' always back-propagates through every " +
                      "segment; set 'train.bptt_depth' to -1 or use \"bptt\"");
  check_int("eval_every", eval_every, 0, int64_t{1} << 40);
  check_int("eval_batches", eval_batches, -1, 1 << 30);
  if (eval_batches == 0) throw ConfigError("config field 'train.eval_batches' = 0; use >= 1, or -1 for the whole split");
  check_int("save_every", save_every, 0, int64_t{1} << 40);
  check_real("save_every_seconds", save_every_seconds, 0.0, 1e9);
  check_int("record_every", record_every, 0, int64_t{1} << 40);
  check_int("record_segments", record_segments, 1, 64);
  curriculum.validate();
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j = {{"steps", steps},           {"batch", batch},     {"lr", lr},
          {"warmup", warmup},         {"schedule", schedule}, {"min_lr_ratio", min_lr_ratio},
          {"weight_decay", weight_decay}, {"clip", clip},   {"bptt_depth", bptt_depth}, {"strategy", strategy},
          {"eval_every", eval_every}, {"eval_batches", eval_batches}, {"save_every", save_every},
          {"save_at_eval", save_at_eval}, {"save_every_seconds", save_every_seconds}, {"record_every", record_every}, {"record_segments", record_segments},
          {"eval_zero_memory", eval_zero_memory}, {"seed", seed}};
  if (curriculum.enabled) j["curriculum"] = curriculum.to_json();
  return j;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("config field 'train' must be a JSON object, got " + std::string(j.type_name()));
  TrainConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto need_int = [&](int64_t& dst) {
      if (!v.is_number_integer()) throw ConfigError("config field 'train." + k + "' must be an integer, got " + v.dump());
      dst = v.get<int64_t>();
    };
    auto need_real = [&](double& dst) {
      if (!v.is_number()) throw ConfigError("config field 'train." + k + "' must be a number, got " + v.dump());
      dst = v.get<double>();
    };
    if (k == "steps") need_int(c.steps);
    else if (k == "batch") need_int(c.batch);
    else if (k == "lr") need_real(c.lr);
    else if (k == "warmup") need_int(c.warmup);
    else if (k == "schedule") {
      if (!v.is_string()) throw ConfigError("config field 'train.schedule' must be a string, got " + v.dump());
      c.schedule = v.get<std::string>();
    } else if (k == "min_lr_ratio") need_real(c.min_lr_ratio);
    else if (k == "weight_decay") need_real(c.weight_decay);
    else if (k == "clip") need_real(c.clip);
    else if (k == "bptt_depth") need_int(c.bptt_depth);
    else if (k == "strategy") {
      if (!v.is_string()) throw ConfigError("config field 'train.strategy' must be a string, got " + v.dump());
      c.strategy = v.get<std::string>();
    }
    else if (k == "eval_every") need_int(c.eval_every);
    else if (k == "eval_batches") need_int(c.eval_batches);
    else if (k == "save_every") need_int(c.save_every);
    else if (k == "save_every_seconds") need_real(c.save_every_seconds);
    else if (k == "save_at_eval") {
      if (!v.is_boolean()) throw ConfigError("config field 'train.save_at_eval' must be true or false, got " + v.dump());
      c.save_at_eval = v.get<bool>();
    }
    else if (k == "record_every") need_int(c.record_every);
    else if (k == "record_segments") need_int(c.record_segments);
    else if (k == "eval_zero_memory") {
      if (!v.is_boolean()) throw ConfigError("config field 'train.eval_zero_memory' must be true or false, got " + v.dump());
      c.eval_zero_memory = v.get<bool>();
    } else if (k == "curriculum") {
      c.curriculum = CurriculumConfig::from_json(v);
    }
    else if (k == "seed") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw ConfigError("config field 'train.seed' must be a non-negative integer, got " + v.dump());
      c.seed = v.get<uint64_t>();
    } else {
      throw ConfigError("config field 'train." + k + "' is unknown; known fields: steps, batch, lr, warmup, schedule, "
                        "min_lr_ratio, weight_decay, clip, bptt_depth, strategy, eval_every, eval_batches, save_every, "
                        "save_at_eval, save_every_seconds, record_every, record_segments, eval_zero_memory, curriculum, seed");
    }
  }
  c.validate();
  return c;
}

void TrainingConfig::validate() const {
  try {
    model.validate();
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    const std::string pre = "config field '";
    if (msg.compare(0, pre.size(), pre) == 0) msg = pre + "model." + msg.substr(pre.size());
    throw ConfigError(msg);
  }
  train.validate();
  auto t = make_task();
  auto check_len = [&](const TaskSource& task, const std::string& what) {
    if (model.segment_len < task.segment_len())
      throw ConfigError("config field 'model.segment_len' = " + std::to_string(model.segment_len) + " is shorter than the " +
                        "task's segments" + what + ": " + task.name() + " examples of " + std::to_string(task.length()) +
                        " tokens in " + std::to_string(task.segments()) + " segments need " +
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
    throw ConfigError("config field 'train.curriculum.max' = " + std::to_string(last) + " is below the start (" +
                      std::to_string(first) + " segments)");
  for (int64_t n = first; n <= last; ++n) {
    std::shared_ptr<TaskSource> tn;
    try {
      tn = mnemo::make_task(task_with_segments(task, n));
    } catch (const ConfigError& e) {
      throw ConfigError("config field 'train.curriculum': the task with " + std::to_string(n) + " segments is invalid: " +
                        e.what());
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
      if (!it.value().is_string()) throw ConfigError("config field 'description' must be a string");
      c.description = it.value().get<std::string>();
    } else if (k == "model") {
      try {
        c.model = ModelConfig::from_json(it.value());
      } catch (const ConfigError& e) {
        std::string msg = e.what();
        const std::string pre = "config field '";
        if (msg.compare(0, pre.size(), pre) == 0) msg = pre + "model." + msg.substr(pre.size());
        throw ConfigError(msg);
      }
      has_model = true;
    } else if (k == "task") {
      c.task = mnemo::make_task(it.value())->to_json();
      has_task = true;
    } else if (k == "train") {
      c.train = TrainConfig::from_json(it.value());
    } else {
      throw ConfigError("config field '" + k + "' is unknown; a training config has model, task, train, description");
    }
  }
  if (!has_model) throw ConfigError("config field 'model' is missing; add the model config object");
  if (!has_task) throw ConfigError("config field 'task' is missing; add e.g. \"task\": {\"name\": \"copy\"}");
  c.validate();
  return c;
}

TrainingConfig TrainingConfig::load(const std::string& path) {
  const nlohmann::json j = io::read_json_config(path);
  try {
    return from_json(j);
  } catch (const ConfigError& e) {
    throw ConfigError("config file '" + path + "': " + e.what());
  }
}

// ---- trainer ----

Trainer::Trainer(TrainingConfig cfg, torch::Device device)
    : cfg_(std::move(cfg)), task_((cfg_.validate(), cfg_.make_task())), device_(device) {
  segments_ = task_->segments();
  if (cfg_.train.curriculum.enabled && cfg_.train.curriculum.start > 0) set_segments(cfg_.train.curriculum.start, 0);
  model_ = make_model(cfg_.model, cfg_.train.seed, device_);
  task_->configure_model(*model_);
  AdamWSettings s;
  s.lr = cfg_.train.lr;
  s.weight_decay = cfg_.train.weight_decay;
  opt_ = make_adamw(*model_, s);
}

double Trainer::learning_rate() const {
  ScheduleOptions o;
  o.kind = cfg_.train.schedule;
  o.lr = cfg_.train.lr;
  o.warmup = cfg_.train.warmup;
  o.total = cfg_.train.steps;
  o.min_lr_ratio = cfg_.train.min_lr_ratio;
  return learning_rate_at(o, step_);
}

StepMetrics Trainer::train_step() {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t global_b = cfg_.train.batch;
  // This rank's shard of the global batch (all of it in one process).
  const int64_t world = pg_ ? pg_->world_size() : 1, rank = pg_ ? pg_->rank() : 0;
  const int64_t lo = rank * global_b / world, hi = (rank + 1) * global_b / world;
  const int64_t b = hi - lo;
  std::vector<int64_t> idx(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) idx[static_cast<size_t>(i)] = step_ * global_b + lo + i;
  if (pg_) pg_->set_phase(step_ + 1, "forward/backward");
  TaskBatch tb = task_->batch(Split::kTrain, idx, device_);

  model_->train();
  opt_->zero_grad();
  StepMetrics m;
  m.lr = learning_rate();
  set_learning_rate(*opt_, m.lr);

  std::vector<torch::Tensor> preds(tb.segments.size()), targets(tb.segments.size());
  const bool next = predicts_next_segment(*model_);
  RolloutOptions ro;
  ro.depth = cfg_.train.bptt_depth;
  ro.strategy = parse_strategy(cfg_.train.strategy);
  ro.freeze_from = tb.memory_frozen_from;
  auto on_segment = [&](int64_t t, const SegmentInput& in, const SegmentOutput& out) {
    preds[static_cast<size_t>(t)] = out.logits.detach().argmax(-1);
    targets[static_cast<size_t>(t)] = score_target(in, next);
  };
  RolloutResult r = run_rollout(*model_, tb.segments, model_->initial_memory(b), ro, on_segment);
  m.loss = r.loss;
  const ScoreTotals scored = score_predictions(preds, targets, score_masks(tb, next));
  m.accuracy = scored.accuracy();
  if (pg_) {
    // The rollout left dJ_r/dθ with J_r = S_r / C_r (this shard's token-weighted mean).
    // The global batch's J = ΣS_r / ΣC_r has the gradient Σ_r C_r dJ_r/dθ / ΣC_r: scale by
    // C_r, sum everything in one flattened allreduce (Gloo has no average), divide by ΣC_r.
    const double compute = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<torch::Tensor> bufs;
    torch::ScalarType dtype = torch::kFloat32;
    for (auto& p : model_->parameters()) {
      if (!p.requires_grad()) continue;
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().mul_(r.loss_count);
      bufs.push_back(p.mutable_grad());
      dtype = p.scalar_type();
    }
    // Counts and per-rank timings ride in the same buffer: loss_sum, loss_count, correct,
    // chars, stop votes, then world_size slots of seconds and of tokens/s (own slot filled).
    const int64_t n_stats = 5 + 2 * world;
    std::vector<double> st(static_cast<size_t>(n_stats), 0.0);
    st[0] = r.loss_sum;
    st[1] = r.loss_count;
    st[2] = scored.correct;
    st[3] = scored.chars;
    st[4] = stop_flag_ && stop_flag_->load() ? 1.0 : 0.0;
    st[static_cast<size_t>(5 + rank)] = compute;
    st[static_cast<size_t>(5 + world + rank)] =
        compute > 0 ? static_cast<double>(b * task_->length()) / compute : 0.0;
    torch::Tensor stats = torch::tensor(st, torch::kFloat64).to(device_, dtype);
    bufs.push_back(stats);
    pg_->set_phase(step_ + 1, "gradient allreduce");
    pg_->allreduce_sum(bufs, "gradient allreduce");
    const torch::Tensor sum = stats.to(torch::kCPU, torch::kFloat64);
    const double total_count = sum[1].item<double>();
    for (size_t i = 0; i + 1 < bufs.size(); ++i) bufs[i].div_(std::max(total_count, 1e-12));
    m.loss = total_count > 0 ? sum[0].item<double>() / total_count : std::numeric_limits<double>::quiet_NaN();
    const double chars = sum[3].item<double>();
    m.accuracy = chars > 0 ? sum[2].item<double>() / chars : 0.0;
    m.stop_agreed = sum[4].item<double>() > 0;
    m.world_size = static_cast<int>(world);
    for (int64_t i = 0; i < world; ++i) {
      m.rank_seconds.push_back(sum[5 + i].item<double>());
      m.rank_tokens_per_s.push_back(sum[5 + world + i].item<double>());
    }
    m.allreduce_seconds = pg_->last_allreduce_seconds();
    pg_->set_phase(step_ + 1, "optimizer step");
  }
  m.grad_norm = clip_grad_norm(*model_, cfg_.train.clip);
  if (!std::isfinite(m.loss) || !std::isfinite(m.grad_norm)) {
    m.non_finite = true;
    opt_->zero_grad();
    m.step = step_;
  } else {
    opt_->step();
    ++step_;
    m.step = step_;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.tokens_per_s = m.seconds > 0 ? static_cast<double>(global_b * task_->length()) / m.seconds : 0.0;
  return m;
}

void Trainer::set_process_group(dist::ProcessGroup* pg) {
  if (pg && pg->world_size() > cfg_.train.batch)
    throw ConfigError("config field 'train.batch' = " + std::to_string(cfg_.train.batch) + " is smaller than the " +
                      std::to_string(pg->world_size()) + " ranks: every rank trains on a share of each global batch; "
                      "use a batch of at least the number of ranks");
  pg_ = pg;
}

namespace {
// A checkpoint as bytes (LibTorch's pickle format) for the broadcast from rank 0.
std::string checkpoint_bytes(const Checkpoint& ck) {
  c10::List<std::string> names;
  c10::List<at::Tensor> tensors;
  for (const auto& [k, t] : ck.tensors) {
    names.push_back(k);
    tensors.push_back(t.detach().to(torch::kCPU).contiguous());
  }
  c10::List<std::string> meta;
  for (const auto& [k, v] : ck.metadata) {
    meta.push_back(k);
    meta.push_back(v);
  }
  const std::vector<char> b = torch::pickle_save(c10::ivalue::Tuple::create({names, tensors, meta}));
  return std::string(b.begin(), b.end());
}

Checkpoint checkpoint_from_bytes(const std::string& bytes) {
  const c10::IValue v = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  const auto& e = v.toTupleRef().elements();
  Checkpoint ck;
  const auto names = e[0].toList(), tensors = e[1].toList(), meta = e[2].toList();
  for (size_t i = 0; i < names.size(); ++i)
    ck.tensors.emplace_back(names.get(i).toStringRef(), tensors.get(i).toTensor());
  for (size_t i = 0; i + 1 < meta.size(); i += 2) ck.metadata[meta.get(i).toStringRef()] = meta.get(i + 1).toStringRef();
  return ck;
}
}  // namespace

void Trainer::sync_from_rank0() {
  if (!pg_) return;
  pg_->set_phase(step_, "start-up broadcast of rank 0's weights");
  const std::string bytes =
      pg_->broadcast_bytes(pg_->rank() == 0 ? checkpoint_bytes(checkpoint()) : std::string(), "broadcast of rank 0's weights");
  if (pg_->rank() != 0) restore(checkpoint_from_bytes(bytes), "rank 0's weights");
}

bool Trainer::has_memory() const { return !model_->initial_memory(1).empty(); }

void Trainer::set_segments(int64_t segments, int64_t since_step) {
  const auto& cu = cfg_.train.curriculum;
  if (cu.enabled) {
    const int64_t first = cu.start > 0 ? cu.start : cfg_.make_task()->segments();
    const int64_t last = cu.max > 0 ? cu.max : first;
    if (segments < first || segments > last)
      throw ConfigError("curriculum segments " + std::to_string(segments) + " are outside the curriculum's " +
                        std::to_string(first) + ".." + std::to_string(last));
  }
  if (segments != segments_ || !task_) {
    old_tasks_.push_back(task_);
    task_ = mnemo::make_task(task_with_segments(cfg_.task, segments));
    segments_ = segments;
    if (model_) task_->configure_model(*model_);
  }
  curriculum_since_ = since_step;
}

std::optional<CurriculumChange> Trainer::advance_curriculum(const EvalMetrics* valid) {
  const auto& cu = cfg_.train.curriculum;
  if (!cu.enabled) return std::nullopt;
  const int64_t last = cu.max > 0 ? cu.max : segments_;
  if (segments_ >= last) return std::nullopt;
  CurriculumChange ch;
  ch.step = step_;
  ch.from = segments_;
  ch.to = segments_ + 1;
  if (cu.rule == "every") {
    if (valid || step_ == 0 || step_ % cu.every != 0) return std::nullopt;
    ch.reason = "every " + std::to_string(cu.every) + " steps";
  } else {
    if (!valid || valid->zero_memory || valid->split != Split::kValid) return std::nullopt;
    if (step_ - curriculum_since_ < cu.min_steps) return std::nullopt;
    if (!(valid->accuracy >= cu.threshold)) return std::nullopt;
    std::ostringstream os;
    os << "valid accuracy " << valid->accuracy << " >= " << cu.threshold;
    ch.reason = os.str();
  }
  set_segments(ch.to, step_);
  return ch;
}

EvalMetrics Trainer::evaluate(Split split, const EvalOptions& opt) {
  if (pg_) pg_->set_phase(step_, "evaluation");
  const int64_t batches = opt.batches == -2 ? cfg_.train.eval_batches : opt.batches;
  ScoreTotals s = evaluate_model(*model_, *task_, split, batches, cfg_.train.batch, opt.zero_memory,
                                 pg_ ? pg_->rank() : 0, pg_ ? pg_->world_size() : 1);
  if (pg_) {
    // The task's own metric names as rank 0 has them (a rank may have scored no batch), then
    // one allreduce of every total.
    std::string names;
    for (const auto& [k, v] : s.extra) names += k + '\n';
    names = pg_->broadcast_bytes(names, "evaluation");
    std::vector<std::string> keys;
    for (size_t a = 0, b; a < names.size(); a = b + 1) {
      b = names.find('\n', a);
      keys.push_back(names.substr(a, b - a));
    }
    std::vector<double> v = {s.loss_sum, s.loss_count, s.chars, s.correct, static_cast<double>(s.examples),
                             static_cast<double>(s.exact)};
    for (const auto& k : keys) {
      auto it = s.extra.find(k);
      v.push_back(it == s.extra.end() ? 0.0 : it->second.first);
      v.push_back(it == s.extra.end() ? 0.0 : it->second.second);
    }
    std::vector<torch::Tensor> t = {torch::tensor(v, torch::kFloat64).to(device_)};
    pg_->allreduce_sum(t, "evaluation");
    const torch::Tensor sum = t[0].to(torch::kCPU);
    const double* d = sum.data_ptr<double>();
    s.loss_sum = d[0];
    s.loss_count = d[1];
    s.chars = d[2];
    s.correct = d[3];
    s.examples = static_cast<int64_t>(std::llround(d[4]));
    s.exact = static_cast<int64_t>(std::llround(d[5]));
    s.extra.clear();
    for (size_t i = 0; i < keys.size(); ++i) s.extra[keys[i]] = {d[6 + 2 * i], d[7 + 2 * i]};
  }
  return eval_metrics(s, *task_, step_, split, opt.zero_memory);
}

TrainOutcome Trainer::run(const TrainCallbacks& cb, const std::atomic<bool>* stop) {
  TrainOutcome o;
  const int64_t start = step_;
  stop_flag_ = stop;
  struct Reset {
    const std::atomic<bool>** p;
    ~Reset() { *p = nullptr; }
  } reset{&stop_flag_};
  auto last_save = std::chrono::steady_clock::now();
  while (step_ < cfg_.train.steps) {
    // Distributed: the ranks agree on stopping inside the step (StepMetrics::stop_agreed).
    if (!pg_ && stop && stop->load()) {
      o.stopped = true;
      break;
    }
    StepMetrics m = train_step();
    if (cb.on_step) cb.on_step(m);
    if (m.non_finite) {
      o.non_finite = true;
      o.message = std::string(std::isfinite(m.loss) ? "gradient norm" : "loss") + " is " +
                  number_label(std::isfinite(m.loss) ? m.grad_norm : m.loss) + " at step " + std::to_string(step_ + 1) +
                  "; the weights are those after step " + std::to_string(step_) +
                  " (lower train.lr or set train.clip)";
      break;
    }
    const bool eval_now = cfg_.train.eval_every > 0 && step_ % cfg_.train.eval_every == 0;
    std::optional<EvalMetrics> valid;
    if (eval_now && (cb.on_eval || cfg_.train.curriculum.enabled)) {
      valid = evaluate(Split::kValid);
      if (cb.on_eval) cb.on_eval(*valid);
      if (cb.on_eval && cfg_.train.eval_zero_memory && has_memory()) {
        EvalOptions zo;
        zo.zero_memory = true;
        cb.on_eval(evaluate(Split::kValid, zo));
      }
    }
    std::optional<CurriculumChange> ch = advance_curriculum(nullptr);
    if (!ch && valid) ch = advance_curriculum(&*valid);
    if (ch && cb.on_curriculum) cb.on_curriculum(*ch);
    const bool by_steps = cfg_.train.save_every > 0 && step_ % cfg_.train.save_every == 0;
    const bool by_eval = eval_now && cfg_.train.save_at_eval;
    const bool by_time = cfg_.train.save_every_seconds > 0 &&
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - last_save).count() >=
                             cfg_.train.save_every_seconds;
    if ((by_steps || by_eval || by_time) && cb.on_save) {
      cb.on_save(step_);
      last_save = std::chrono::steady_clock::now();
    }
    if (m.stop_agreed) {
      o.stopped = true;
      break;
    }
  }
  o.steps_done = step_ - start;
  return o;
}

Checkpoint Trainer::checkpoint() const {
  Checkpoint c;
  for (auto& [k, t] : named_weights(*model_)) c.tensors.emplace_back(k, t);
  for (auto& kv : adamw_state(*opt_, *model_)) c.tensors.push_back(kv);
  c.metadata["format"] = kCheckpointFormat;
  c.metadata["format_version"] = std::to_string(kCheckpointVersion);
  c.metadata["step"] = std::to_string(step_);
  c.metadata["config"] = cfg_.to_json().dump();
  c.metadata["program_version"] = MNEMO_VERSION;
  if (cfg_.train.curriculum.enabled) {
    c.metadata["segments"] = std::to_string(segments_);
    c.metadata["curriculum_since"] = std::to_string(curriculum_since_);
  }
  return c;
}

void Trainer::restore(const Checkpoint& ckpt, const std::string& source) {
  auto it = ckpt.metadata.find("config");
  if (it != ckpt.metadata.end()) {
    nlohmann::json saved;
    try {
      saved = nlohmann::json::parse(it->second);
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(source + ": the checkpoint's config metadata is not valid JSON");
    }
    if (saved.contains("model") && saved["model"] != cfg_.model.to_json()) {
      std::string diff;
      for (const auto& d : config_differences(saved["model"], cfg_.model.to_json(), "model"))
        diff += (diff.empty() ? "" : "; ") + d;
      throw ConfigError(source + ": the checkpoint was made for another model config (the checkpoint's value vs "
                        "this config's: " + diff + "); pass the config it was trained with");
    }
  }
  if (cfg_.train.curriculum.enabled) {
    auto get = [&](const char* key, int64_t dflt) {
      auto m = ckpt.metadata.find(key);
      if (m == ckpt.metadata.end()) return dflt;
      try {
        return static_cast<int64_t>(std::stoll(m->second));
      } catch (const std::exception&) {
        throw ConfigError(source + ": the checkpoint's '" + key + "' metadata '" + m->second + "' is not a number");
      }
    };
    set_segments(get("segments", segments_), get("curriculum_since", 0));
  }
  const int64_t step = ckpt.step();
  if (step < 0) throw ConfigError(source + ": the checkpoint has no step");
  load_weights(*model_, model_weights_only(ckpt.tensors), source);
  try {
    load_adamw_state(*opt_, *model_, ckpt.tensors);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source + ": " + e.what());
  }
  step_ = step;
}

}  // namespace mnemo
