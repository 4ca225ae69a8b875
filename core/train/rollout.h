// A rollout: one model run over consecutive segments with memory carried between them,
// with the gradients of a chosen training strategy (docs/models.md#memformer "Training",
// Memformer (docs/references.md#memformer) §3.5 and Algorithm 1).
//
// The objective of a rollout is the token-weighted mean loss over all its segments:
//   J = sum_t loss_sum_t / sum_t loss_count_t
// Every strategy accumulates dJ/dθ into the parameters' .grad (call zero_grad first, or
// keep earlier gradients to accumulate over several rollouts); strategies differ only in
// memory/time cost and in how far back gradients flow:
//
//   strategy     gradients                 peak activations        extra compute
//   bptt, k<0    full BPTT                 all T segments          none
//   bptt, k>=0   exact truncation depth k  k+1 segments            ~(k+1)x forward+backward
//   checkpoint   = full BPTT               one segment             one full forward (no grad)
//   mrbp         = full BPTT               one segment             the memory path only (no grad)
//
// Memory across rollouts (as in the paper): a rollout starts from `memory_in` and returns
// `final_memory` (detached). To carry memory over a long document, pass the final_memory of
// one rollout as the memory_in of the next; gradients never cross a rollout boundary (the
// rollout length T is the paper's "time horizon"). For independent sequences (e.g. one
// MNIST image per rollout) pass model.initial_memory(B) each time: when memory_in requires
// grad (Memformer's m_0 = v_bias/||v_bias||), every strategy back-propagates into it.
//
// Works for any MemoryModelImpl: floating-point memory tensors carry gradients, others
// (e.g. int64 indices) are carried along detached.
#pragma once
#include "core/errors.h"
#include "core/models/model.h"

#include <functional>
#include <string>
#include <vector>

namespace mnemo {

enum class Strategy {
  kBptt,        // back-propagation through time with depth k (RolloutOptions::depth)
  kCheckpoint,  // gradient checkpointing per segment: full-BPTT gradients; each segment is one
                // autograd node that runs under no-grad and recomputes itself in backward
  kMrbp,        // Memory Replay Back-Propagation (Algorithm 1): full-BPTT gradients
};

// "bptt" | "checkpoint" | "mrbp". Throws ConfigError naming the field 'strategy' otherwise.
Strategy parse_strategy(const std::string& name);
// The names parse_strategy takes.
const std::vector<std::string>& known_strategies();
const char* strategy_name(Strategy s);

struct RolloutOptions {
  Strategy strategy = Strategy::kBptt;
  // BPTT depth k: the gradient of segment t's loss flows into at most k earlier segments
  // (through the memory they wrote). -1 = all (full BPTT). 0 = memory detached.
  // checkpoint and mrbp always back-propagate through the whole rollout: they accept only
  // -1 (or k >= T-1) and throw std::invalid_argument otherwise.
  int64_t depth = -1;
  bool backward = true;  // false: forward only, under NoGradGuard (evaluation)
  // From this segment on the memory is read but not updated (TaskBatch::memory_frozen_from,
  // the QA inference phase); -1 = never. Only full BPTT (strategy bptt, depth -1) and
  // forward-only rollouts support it; the others throw std::invalid_argument.
  int64_t freeze_from = -1;
};

struct RolloutResult {
  double loss = 0;  // J (NaN/Inf propagate: the caller reports them)
  double loss_sum = 0;
  double loss_count = 0;
  std::vector<double> segment_loss_sum, segment_loss_count;
  MemoryState final_memory;  // memory after the last segment, detached
};

// Called once per segment with the forward output that defines the loss (for metrics).
// Order: t ascending for every strategy except mrbp, which calls it during its backward
// sweep (t descending) with the recomputed output. `out` may carry a graph; do not keep it.
using SegmentCallback = std::function<void(int64_t t, const SegmentInput& in, const SegmentOutput& out)>;

// Runs `model` over `segments` starting from `memory_in`. If memory_in holds tensors that
// require grad (e.g. a learned initial memory), gradients reach the parameters behind it.
// Every segment's output must define loss_sum and loss_count.
// Recomputing strategies (truncated bptt, checkpoint, mrbp) replay the default CPU/CUDA
// random generator state of each segment, so dropout masks match between passes.
// mrbp's no-grad pass drops the targets (next_tokens/next_valid/targets/target_valid), so
// a model whose next memory depends on its targets must not be trained with mrbp.
RolloutResult run_rollout(MemoryModelImpl& model, const std::vector<SegmentInput>& segments,
                          const MemoryState& memory_in, const RolloutOptions& opt,
                          const SegmentCallback& on_segment = {});

// memory with every tensor detached (no copy).
MemoryState detach_memory(const MemoryState& m);

}  // namespace mnemo
