#include "core/train/trainer.h"

#include "core/io/json_file.h"
#include "core/dist/process_group.h"
#include "core/models/factory.h"
#include "core/io/config_fields.h"
#include "core/train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace mnemo {

Trainer::Trainer(TrainingConfig cfg, torch::Device device)
    : cfg_(std::move(cfg)), task_((cfg_.validate(), cfg_.make_task())), device_(device) {
  segments_ = task_->segments();
  if (cfg_.train.curriculum.enabled && cfg_.train.curriculum.start > 0) set_segments(cfg_.train.curriculum.start, 0);
  check_model_fits_memory(cfg_.model, 4);  // weights, gradients, two Adam moments
  model_ = make_model(cfg_.model, cfg_.train.seed, device_);
  model_->set_task_head(task_->head());
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

void Trainer::check_trainable() const {
  if (!predicts_next_segment(*model_)) return;
  const TaskBatch probe = task_->batch(Split::kTrain, {0}, torch::kCPU);
  for (size_t t = 0; t < probe.segments.size(); ++t)
    if (!probe.segments[t].next_tokens.defined())
      throw field_error("model.model", "= " + cfg_.model.model + " predicts the next segment, but task '" +
                                           task_->name() + "' gives segment " + std::to_string(t) +
                                           " none to predict; train it on a task that gives every segment a next "
                                           "one (copy-recall, text, moby-dick, ...) or use a model that predicts "
                                           "within the segment (rmt, trxl, transformer)");
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
  clear_gradients(*opt_);
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
    clear_gradients(*opt_);
    m.step = step_;
  } else {
    adamw_step(*opt_);
    ++step_;
    m.step = step_;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.tokens_per_s = m.seconds > 0 ? static_cast<double>(global_b * task_->length()) / m.seconds : 0.0;
  return m;
}

void Trainer::set_process_group(dist::ProcessGroup* pg) {
  if (pg && pg->world_size() > cfg_.train.batch)
    throw field_error("train.batch", "= " + std::to_string(cfg_.train.batch) + " is smaller than the " +
                                         std::to_string(pg->world_size()) + " ranks: every rank trains on a share of "
                                         "each global batch; use a batch of at least the number of ranks");
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
    if (model_) model_->set_task_head(task_->head());
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
                  number_text(std::isfinite(m.loss) ? m.grad_norm : m.loss) + " at step " + std::to_string(step_ + 1) +
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
      saved = mnemo::io::parse_json(it->second);
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
