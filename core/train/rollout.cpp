#include "core/train/rollout.h"

#include <limits>
#include <stdexcept>

namespace mnemo {

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

void check_loss(const SegmentOutput& out, int64_t t) {
  TORCH_CHECK(out.loss_sum.defined() && out.loss_count.defined(), "rollout: segment ", t,
              " produced no loss (loss_sum/loss_count undefined); give every segment a target");
}

RolloutResult forward_only(MemoryModelImpl& model, const std::vector<SegmentInput>& segs, const MemoryState& in,
                           const SegmentCallback& cb) {
  torch::NoGradGuard g;
  RolloutResult r;
  MemoryState mem = detach_memory(in);
  for (size_t t = 0; t < segs.size(); ++t) {
    SegmentOutput out = model.step(segs[t], mem, nullptr);
    check_loss(out, static_cast<int64_t>(t));
    r.segment_loss_sum.push_back(out.loss_sum.item<double>());
    r.segment_loss_count.push_back(out.loss_count.item<double>());
    if (cb) cb(static_cast<int64_t>(t), segs[t], out);
    mem = std::move(out.memory);
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
                        const SegmentCallback& cb) {
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
    mem = std::move(out.memory);
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
  std::vector<MemoryState> kept;
  RolloutResult r;
  {
    torch::NoGradGuard g;
    MemoryState mem = detach_memory(in);
    for (int64_t t = 0; t < n; ++t) {
      kept.push_back(mem);
      SegmentOutput out = model.step(segs[t], mem, nullptr);
      check_loss(out, t);
      r.segment_loss_sum.push_back(out.loss_sum.item<double>());
      r.segment_loss_count.push_back(out.loss_count.item<double>());
      mem = std::move(out.memory);
    }
    r.final_memory = detach_memory(mem);
  }
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
      out = model.step(segs[s], mem, nullptr);
      mem = std::move(out.memory);
    }
    if (cb) cb(t, segs[t], out);
    (out.loss_sum / denom).backward({}, /*retain_graph=*/shared_input_graph && start == 0);
  }
  return r;
}

}  // namespace

RolloutResult run_rollout(MemoryModelImpl& model, const std::vector<SegmentInput>& segments,
                          const MemoryState& memory_in, const RolloutOptions& opt, const SegmentCallback& on_segment) {
  if (segments.empty()) throw std::invalid_argument("rollout: no segments");
  if (opt.depth < -1) throw std::invalid_argument("rollout: depth must be -1 (full) or >= 0");
  if (!opt.backward) return forward_only(model, segments, memory_in, on_segment);
  switch (opt.strategy) {
    case Strategy::kBptt:
      if (opt.depth < 0 || opt.depth >= static_cast<int64_t>(segments.size()) - 1)
        return full_bptt(model, segments, memory_in, on_segment);
      return truncated_bptt(model, segments, memory_in, opt.depth, on_segment);
  }
  throw std::invalid_argument("rollout: unknown strategy");
}

}  // namespace mnemo
