#include "core/train/rollout.h"

#include "core/io/config_fields.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <mutex>
#include <stdexcept>

namespace mnemo {

const std::vector<std::string>& known_strategies() {
  static const std::vector<std::string> k = {"bptt", "checkpoint", "mrbp"};
  return k;
}

Strategy parse_strategy(const std::string& name) {
  if (name == "bptt") return Strategy::kBptt;
  if (name == "checkpoint") return Strategy::kCheckpoint;
  if (name == "mrbp") return Strategy::kMrbp;
  check_choice("strategy", name, known_strategies());  // throws: name is none of them
  return Strategy::kBptt;
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kBptt: return "bptt";
    case Strategy::kCheckpoint: return "checkpoint";
    case Strategy::kMrbp: return "mrbp";
  }
  return "?";
}

MemoryState detach_memory(const MemoryState& m) {
  MemoryState out;
  for (const auto& [k, t] : m.tensors) out.tensors[k] = t.defined() ? t.detach() : t;
  return out;
}

namespace {

bool any_requires_grad(const MemoryState& m) {
  for (const auto& [k, t] : m.tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// Memory tensors that carry gradients.
bool differentiable(const torch::Tensor& t) { return t.defined() && t.is_floating_point(); }

void check_loss(const SegmentOutput& out, int64_t t) {
  TORCH_CHECK(out.loss_sum.defined() && out.loss_count.defined(), "rollout: segment ", t,
              " produced no loss (loss_sum/loss_count undefined); give every segment a target");
}

// --- random generator replay: a recomputed segment draws the same dropout masks ---

struct RngState {
  torch::Tensor cpu, cuda;
  torch::Device cuda_device{torch::kCPU};
};

RngState save_rng(const torch::Device& dev) {
  RngState s;
  {
    at::Generator g = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(g.mutex());
    s.cpu = g.get_state();
  }
  if (dev.is_cuda()) {
    at::Generator g = at::globalContext().defaultGenerator(dev);
    std::lock_guard<std::mutex> lock(g.mutex());
    s.cuda = g.get_state();
    s.cuda_device = dev;
  }
  return s;
}

void restore_rng(const RngState& s) {
  if (s.cpu.defined()) {
    at::Generator g = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(s.cpu);
  }
  if (s.cuda.defined()) {
    at::Generator g = at::globalContext().defaultGenerator(s.cuda_device);
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(s.cuda);
  }
}

// Totals of the per-segment losses (kept as detached tensors: one device sync at the end).
void finish_totals(RolloutResult& r, const std::vector<torch::Tensor>& sums, const std::vector<torch::Tensor>& counts) {
  r.segment_loss_sum.clear();
  r.segment_loss_count.clear();
  for (size_t t = 0; t < sums.size(); ++t) {
    r.segment_loss_sum.push_back(sums[t].item<double>());
    r.segment_loss_count.push_back(counts[t].item<double>());
    r.loss_sum += r.segment_loss_sum.back();
    r.loss_count += r.segment_loss_count.back();
  }
  r.loss = r.loss_count > 0 ? r.loss_sum / r.loss_count : std::numeric_limits<double>::quiet_NaN();
}

// Whether segment t's output memory is carried on: segments from freeze_from on all see the
// memory after segment freeze_from - 1.
bool updates_memory(int64_t t, int64_t freeze_from) { return freeze_from < 0 || t < freeze_from; }

RolloutResult forward_only(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                           const SegmentCallback& cb, int64_t freeze_from) {
  torch::NoGradGuard g;
  RolloutResult r;
  MemoryState mem = detach_memory(in);
  for (size_t t = 0; t < segs.size(); ++t) {
    SegmentOutput out = model.step(segs[t], mem, nullptr);
    check_loss(out, static_cast<int64_t>(t));
    r.segment_loss_sum.push_back(out.loss_sum.item<double>());
    r.segment_loss_count.push_back(out.loss_count.item<double>());
    if (cb) cb(static_cast<int64_t>(t), segs[t], out);
    if (updates_memory(static_cast<int64_t>(t), freeze_from)) mem = std::move(out.memory);
  }
  for (size_t t = 0; t < segs.size(); ++t) {
    r.loss_sum += r.segment_loss_sum[t];
    r.loss_count += r.segment_loss_count[t];
  }
  r.loss = r.loss_count > 0 ? r.loss_sum / r.loss_count : std::numeric_limits<double>::quiet_NaN();
  r.final_memory = detach_memory(mem);
  return r;
}

// Full BPTT: one graph over the whole rollout, one backward of J.
RolloutResult full_bptt(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                        const SegmentCallback& cb, int64_t freeze_from) {
  RolloutResult r;
  MemoryState mem = in;
  torch::Tensor sum, count;
  for (size_t t = 0; t < segs.size(); ++t) {
    SegmentOutput out = model.step(segs[t], mem, nullptr);
    check_loss(out, static_cast<int64_t>(t));
    r.segment_loss_sum.push_back(out.loss_sum.item<double>());
    r.segment_loss_count.push_back(out.loss_count.item<double>());
    sum = sum.defined() ? sum + out.loss_sum : out.loss_sum;
    count = count.defined() ? count + out.loss_count : out.loss_count;
    if (cb) cb(static_cast<int64_t>(t), segs[t], out);
    if (updates_memory(static_cast<int64_t>(t), freeze_from)) mem = std::move(out.memory);
  }
  auto j = sum / count.detach().clamp_min(1e-12);
  j.backward();
  r.loss_sum = sum.item<double>();
  r.loss_count = count.item<double>();
  r.loss = j.item<double>();
  r.final_memory = detach_memory(mem);
  return r;
}

// Truncated BPTT with exact depth k: a no-grad pass keeps the memory before every
// segment; then for each t the window max(0, t-k)..t is recomputed with grad from the
// kept (detached) memory and only segment t's loss is back-propagated. Cost: about
// (k+1) forward+backward segment steps per segment.
RolloutResult truncated_bptt(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                             int64_t depth, const SegmentCallback& cb) {
  const int64_t n = static_cast<int64_t>(segs.size());
  const torch::Device dev = model.device();
  std::vector<MemoryState> kept;
  std::vector<RngState> rng;
  RolloutResult r;
  {
    torch::NoGradGuard g;
    MemoryState mem = detach_memory(in);
    for (int64_t t = 0; t < n; ++t) {
      kept.push_back(mem);
      rng.push_back(save_rng(dev));
      SegmentOutput out = model.step(segs[t], mem, nullptr);
      check_loss(out, t);
      r.segment_loss_sum.push_back(out.loss_sum.item<double>());
      r.segment_loss_count.push_back(out.loss_count.item<double>());
      mem = std::move(out.memory);
    }
    r.final_memory = detach_memory(mem);
  }
  const RngState rng_end = save_rng(dev);
  for (int64_t t = 0; t < n; ++t) {
    r.loss_sum += r.segment_loss_sum[t];
    r.loss_count += r.segment_loss_count[t];
  }
  r.loss = r.loss_count > 0 ? r.loss_sum / r.loss_count : std::numeric_limits<double>::quiet_NaN();
  const double denom = std::max(r.loss_count, 1e-12);
  const bool shared_input_graph = any_requires_grad(in);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t start = std::max<int64_t>(0, t - depth);
    MemoryState mem = start == 0 ? in : kept[static_cast<size_t>(start)];
    SegmentOutput out;
    for (int64_t s = start; s <= t; ++s) {
      restore_rng(rng[static_cast<size_t>(s)]);
      out = model.step(segs[s], mem, nullptr);
      mem = std::move(out.memory);
    }
    if (cb) cb(t, segs[t], out);
    (out.loss_sum / denom).backward({}, /*retain_graph=*/shared_input_graph && start == 0);
  }
  restore_rng(rng_end);
  return r;
}

// --- gradient checkpointing: one autograd node per segment ---

// What a checkpointed segment needs to run again in backward. Owned by the node's context.
struct SegmentReplay : torch::CustomClassHolder {
  MemoryModelImpl* model = nullptr;
  const SegmentInput* seg = nullptr;
  int64_t index = 0;
  MemoryState in_state;               // the memory before the segment, detached (all tensors)
  std::vector<std::string> in_keys;   // differentiable inputs, in the order of inputs[1..]
  std::vector<std::string> out_keys;  // differentiable memory outputs, in the order of outputs[1..]
  RngState rng;
  SegmentOutput forward_out;  // the no-grad forward output; the caller takes it right after apply
};

// inputs  = [anchor, differentiable memory before the segment...]
// outputs = [loss_sum, differentiable memory after the segment...]
// The anchor is a scalar leaf that requires grad, so the node is recorded (and the
// parameters get their gradients) even when no memory input requires grad. Parameter
// gradients are accumulated as a side effect of the re-entrant backward inside backward().
struct CheckpointedSegment : torch::autograd::Function<CheckpointedSegment> {
  // `inputs` is a TensorList: custom Function's apply() extracts the variables from a
  // TensorList argument, not from a std::vector (that would be taken as a plain argument).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                                                c10::intrusive_ptr<SegmentReplay> replay) {
    ctx->set_materialize_grads(false);
    SegmentReplay& r = *replay;
    r.rng = save_rng(r.model->device());
    SegmentOutput out = r.model->step(*r.seg, r.in_state, nullptr);  // grad mode is off here
    check_loss(out, r.index);
    torch::autograd::variable_list res{out.loss_sum.detach()};
    for (const auto& [k, v] : out.memory.tensors) {
      if (!differentiable(v)) continue;
      bool aliases_input = false;
      for (size_t i = 1; i < inputs.size(); ++i) aliases_input = aliases_input || v.is_alias_of(inputs[i]);
      r.out_keys.push_back(k);
      res.push_back(aliases_input ? v.clone() : v);  // an output must be a new tensor
    }
    r.forward_out = std::move(out);
    ctx->saved_data["replay"] = c10::IValue::make_capsule(std::move(replay));
    return res;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto holder = ctx->saved_data["replay"].toCapsule();
    SegmentReplay& r = *static_cast<SegmentReplay*>(holder.get());
    torch::AutoGradMode grad_on(true);
    const RngState now = save_rng(r.model->device());
    restore_rng(r.rng);
    MemoryState mem = r.in_state;
    std::vector<torch::Tensor> leaves(r.in_keys.size());
    for (size_t i = 0; i < r.in_keys.size(); ++i) {
      auto leaf = r.in_state.at(r.in_keys[i]).detach();
      if (ctx->needs_input_grad(i + 1)) leaf.requires_grad_(true);
      leaves[i] = leaf;
      mem.tensors[r.in_keys[i]] = leaf;
    }
    SegmentOutput out = r.model->step(*r.seg, mem, nullptr);
    restore_rng(now);
    std::vector<torch::Tensor> outs, grads;
    if (grad_out[0].defined() && out.loss_sum.requires_grad()) {
      outs.push_back(out.loss_sum);
      grads.push_back(grad_out[0]);
    }
    for (size_t i = 0; i < r.out_keys.size(); ++i) {
      const auto& g = grad_out[i + 1];
      auto it = out.memory.tensors.find(r.out_keys[i]);
      if (g.defined() && it != out.memory.tensors.end() && it->second.requires_grad()) {
        outs.push_back(it->second);
        grads.push_back(g);
      }
    }
    if (!outs.empty()) torch::autograd::backward(outs, grads);
    // One entry per forward argument: the anchor, the memory inputs, then the (non-tensor) replay.
    torch::autograd::variable_list res(1 + leaves.size() + 1);
    for (size_t i = 0; i < leaves.size(); ++i)
      if (leaves[i].requires_grad()) res[i + 1] = leaves[i].grad();
    return res;
  }
};

RolloutResult checkpointed(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                           const SegmentCallback& cb) {
  const int64_t n = static_cast<int64_t>(segs.size());
  RolloutResult r;
  auto anchor = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true));
  std::vector<torch::Tensor> sums, counts;
  MemoryState mem = in;
  torch::Tensor total;
  for (int64_t t = 0; t < n; ++t) {
    auto replay = c10::make_intrusive<SegmentReplay>();
    replay->model = &model;
    replay->seg = &segs[static_cast<size_t>(t)];
    replay->index = t;
    torch::autograd::variable_list inputs{anchor};
    for (const auto& [k, v] : mem.tensors) {
      replay->in_state.tensors[k] = v.defined() ? v.detach() : v;
      if (differentiable(v)) {
        replay->in_keys.push_back(k);
        inputs.push_back(v);
      }
    }
    SegmentReplay* rp = replay.get();  // the node's context keeps it alive
    auto outs = CheckpointedSegment::apply(at::TensorList(inputs), std::move(replay));
    TORCH_INTERNAL_ASSERT(outs.size() == 1 + rp->out_keys.size() && outs[0].requires_grad(),
                          "rollout: checkpointed segment was not recorded by autograd");
    SegmentOutput fwd = std::move(rp->forward_out);
    rp->forward_out = SegmentOutput();
    sums.push_back(fwd.loss_sum.detach());
    counts.push_back(fwd.loss_count.detach());
    if (cb) cb(t, segs[static_cast<size_t>(t)], fwd);
    MemoryState next;
    for (const auto& [k, v] : fwd.memory.tensors) next.tensors[k] = v;  // non-differentiable ones as they are
    for (size_t i = 0; i < rp->out_keys.size(); ++i) next.tensors[rp->out_keys[i]] = outs[i + 1];
    total = total.defined() ? total + outs[0] : outs[0];
    mem = std::move(next);
  }
  finish_totals(r, sums, counts);
  (total / std::max(r.loss_count, 1e-12)).backward();
  r.final_memory = detach_memory(mem);
  return r;
}

// --- Memory Replay Back-Propagation (Memformer (docs/references.md#memformer) Algorithm 1) ---
//
// 1. No-grad pass along the critical path only (the targets are dropped, so Memformer runs
//    no decoder): keeps M_t..M_T (detached) and each segment's generator state.
// 2. For t = T..1: recompute segment t with grad from the kept M_{t-1} (a leaf), back-
//    propagate its loss together with dM_t on its memory output (one backward with
//    grad_tensors), and hand the leaf's .grad, dM_{t-1}, to the previous segment.
// The losses are back-propagated with weight 1 and the new gradients divided by
// sum_t loss_count_t at the end (the count is known only after the recomputation);
// gradients already in .grad are kept apart meanwhile, so accumulation still works.
// 3. If memory_in requires grad, dM_0 / count is handed to it with one more backward.
RolloutResult mrbp(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                   const SegmentCallback& cb) {
  const int64_t n = static_cast<int64_t>(segs.size());
  const torch::Device dev = model.device();
  RolloutResult r;
  std::vector<MemoryState> replay_buffer;
  std::vector<RngState> rng;
  replay_buffer.reserve(static_cast<size_t>(n));
  {
    torch::NoGradGuard g;
    MemoryState mem = detach_memory(in);
    for (int64_t t = 0; t < n; ++t) {
      replay_buffer.push_back(mem);
      rng.push_back(save_rng(dev));
      SegmentInput path = segs[static_cast<size_t>(t)];
      path.next_tokens = path.next_valid = path.targets = path.target_valid = torch::Tensor();
      mem = detach_memory(model.step(path, mem, nullptr).memory);
    }
    r.final_memory = std::move(mem);
  }
  const RngState rng_end = save_rng(dev);

  std::vector<torch::Tensor> params = model.parameters();
  std::vector<torch::Tensor> earlier(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    earlier[i] = params[i].grad();
    if (earlier[i].defined()) params[i].mutable_grad() = torch::Tensor();
  }

  std::vector<torch::Tensor> sums(static_cast<size_t>(n)), counts(static_cast<size_t>(n));
  std::map<std::string, torch::Tensor> dm;  // d(sum_t loss_sum_t) / d(memory after the segment being processed)
  for (int64_t t = n - 1; t >= 0; --t) {
    const auto ts = static_cast<size_t>(t);
    restore_rng(rng[ts]);
    MemoryState mem;
    std::map<std::string, torch::Tensor> leaves;
    for (const auto& [k, v] : replay_buffer[ts].tensors) {
      const bool needs = differentiable(v) && (t > 0 || in.at(k).requires_grad());
      if (needs) {
        auto leaf = v.detach().requires_grad_(true);
        leaves[k] = leaf;
        mem.tensors[k] = leaf;
      } else {
        mem.tensors[k] = v;
      }
    }
    replay_buffer[ts] = MemoryState();  // popped: M_{t-1} lives on only as the leaf
    SegmentOutput out = model.step(segs[ts], mem, nullptr);
    check_loss(out, t);
    sums[ts] = out.loss_sum.detach();
    counts[ts] = out.loss_count.detach();
    if (cb) cb(t, segs[ts], out);
    std::vector<torch::Tensor> outs, grads;
    if (out.loss_sum.requires_grad()) {
      outs.push_back(out.loss_sum);
      grads.push_back(torch::ones_like(out.loss_sum));
    }
    for (const auto& [k, g] : dm) {
      auto it = out.memory.tensors.find(k);
      if (it != out.memory.tensors.end() && it->second.defined() && it->second.requires_grad()) {
        outs.push_back(it->second);
        grads.push_back(g);
      }
    }
    if (!outs.empty()) torch::autograd::backward(outs, grads);
    dm.clear();
    for (const auto& [k, leaf] : leaves)
      if (leaf.grad().defined()) dm[k] = leaf.grad();
  }
  restore_rng(rng_end);
  finish_totals(r, sums, counts);

  const double denom = std::max(r.loss_count, 1e-12);
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor fresh = params[i].grad();
      if (fresh.defined()) fresh.div_(denom);
      if (earlier[i].defined()) params[i].mutable_grad() = fresh.defined() ? earlier[i].add_(fresh) : earlier[i];
    }
  }
  if (!dm.empty()) {
    std::vector<torch::Tensor> outs, grads;
    for (const auto& [k, g] : dm) {
      outs.push_back(in.at(k));
      grads.push_back(g / denom);
    }
    torch::autograd::backward(outs, grads);
  }
  return r;
}

}  // namespace

RolloutResult run_rollout(MemoryModelImpl& model, const std::vector<SegmentInput>& segments,
                          const MemoryState& memory_in, const RolloutOptions& opt, const SegmentCallback& on_segment) {
  if (segments.empty()) throw std::invalid_argument("rollout: no segments");
  if (opt.depth < -1) throw std::invalid_argument("rollout: depth must be -1 (full) or >= 0");
  if (!opt.backward) return forward_only(model, segments, memory_in, on_segment, opt.freeze_from);
  const bool full = opt.depth < 0 || opt.depth >= static_cast<int64_t>(segments.size()) - 1;
  if (opt.freeze_from >= 0 && !(opt.strategy == Strategy::kBptt && full))
    throw std::invalid_argument("rollout: a batch whose memory is frozen from segment " + std::to_string(opt.freeze_from) +
                                " (e.g. the qa task) trains with strategy 'bptt' and depth -1 only");
  if (opt.strategy != Strategy::kBptt && !full)
    throw std::invalid_argument(std::string("rollout: strategy '") + strategy_name(opt.strategy) +
                                "' back-propagates through the whole rollout, so depth must be -1 (got " +
                                std::to_string(opt.depth) + "); use strategy 'bptt' for a truncation depth, or a "
                                "shorter rollout");
  switch (opt.strategy) {
    case Strategy::kBptt:
      if (full) return full_bptt(model, segments, memory_in, on_segment, opt.freeze_from);
      return truncated_bptt(model, segments, memory_in, opt.depth, on_segment);
    case Strategy::kCheckpoint:
      return checkpointed(model, segments, memory_in, on_segment);
    case Strategy::kMrbp:
      return mrbp(model, segments, memory_in, on_segment);
  }
  throw std::invalid_argument("rollout: unknown strategy");
}

}  // namespace mnemo
