// A rollout: one model run over consecutive segments with memory carried between them,
// with the gradients of a chosen training strategy (DESIGN §3.1 "Training").
//
// The objective of a rollout is the token-weighted mean loss over all its segments:
//   J = sum_t loss_sum_t / sum_t loss_count_t
// Every strategy accumulates dJ/dθ into the parameters' .grad (call zero_grad first);
// strategies differ only in memory/time cost and in how far back gradients flow.
#pragma once
#include "core/models/model.h"

#include <functional>
#include <vector>

namespace mnemo {

enum class Strategy {
  kBptt,  // back-propagation through time with depth k (RolloutOptions::depth)
};

struct RolloutOptions {
  Strategy strategy = Strategy::kBptt;
  // BPTT depth k: the gradient of segment t's loss flows into at most k earlier segments
  // (through the memory they wrote). -1 = all (full BPTT). 0 = memory detached.
  int64_t depth = -1;
  bool backward = true;  // false: forward only, under NoGradGuard (evaluation)
};

struct RolloutResult {
  double loss = 0;  // J (NaN/Inf propagate: the caller reports them)
  double loss_sum = 0;
  double loss_count = 0;
  std::vector<double> segment_loss_sum, segment_loss_count;
  MemoryState final_memory;  // memory after the last segment, detached
};

// Called once per segment with the forward output that defines the loss (for metrics).
using SegmentCallback = std::function<void(int64_t t, const SegmentInput& in, const SegmentOutput& out)>;

// Runs `model` over `segments` starting from `memory_in`. If memory_in holds tensors that
// require grad (e.g. a learned initial memory), gradients reach the parameters behind it.
// Every segment's output must define loss_sum and loss_count.
RolloutResult run_rollout(MemoryModelImpl& model, const std::vector<SegmentInput>& segments,
                          const MemoryState& memory_in, const RolloutOptions& opt,
                          const SegmentCallback& on_segment = {});

// memory with every tensor detached (no copy).
MemoryState detach_memory(const MemoryState& m);

}  // namespace mnemo
