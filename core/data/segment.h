// What a task hands a model: one segment of input, and the output head the task needs.
// The data layer (core/data) produces these and the models (core/models) consume them; this
// header is the whole of what the two share, so core/data includes nothing of core/models
// (tests/check_includes.sh). docs/architecture.md#layers.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace mnemo {

// One segment of input. Models that predict the next segment (Memformer) use next_*;
// left undefined, no loss is computed.
struct SegmentInput {
  torch::Tensor tokens;       // [B, L] int64
  torch::Tensor valid;        // [B, L] bool (false on padding)
  torch::Tensor next_tokens;  // [B, L] int64 or undefined
  torch::Tensor next_valid;   // [B, L] bool or undefined
  torch::Tensor offsets;      // [B, L, 2] int64 byte ranges (traced as input.offsets), optional
  // Within-segment targets for decoder-only / token-classification models (RMT, TrXL, MTN):
  // targets[b, j] is what position j must predict; loss only where target_valid is true.
  torch::Tensor targets;       // [B, L] int64 or undefined
  torch::Tensor target_valid;  // [B, L] bool or undefined
};

// The defined tensors of `in` named "<prefix>tokens", "<prefix>valid", "<prefix>targets",
// "<prefix>target_valid", "<prefix>next_tokens", "<prefix>next_valid" (the Python package's
// Segment fields): how a batch goes to Python (bench train --against-python, python/tests/grad_dump).
inline std::vector<std::pair<std::string, torch::Tensor>> named_segment_tensors(const SegmentInput& in,
                                                                                const std::string& prefix) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [name, x] : {std::pair<const char*, const torch::Tensor*>{"tokens", &in.tokens},
                                {"valid", &in.valid},
                                {"targets", &in.targets},
                                {"target_valid", &in.target_valid},
                                {"next_tokens", &in.next_tokens},
                                {"next_valid", &in.next_valid}})
    if (x->defined()) out.emplace_back(prefix + name, *x);
  return out;
}

// What a task asks of the model's output head (MemoryModelImpl::set_task_head).
//  kLanguageModel: targets are token ids; every model does this.
//  kAnswerTagging: targets are 0/1 (answer token or not), the MTN paper's token
//    classification with class-weighted NLL sum_j w_{y_j} nll_j / sum_j w_{y_j}; only
//    models whose capabilities say tags_tokens (the MTN family) can.
struct TaskHead {
  enum class Kind { kLanguageModel, kAnswerTagging };
  Kind kind = Kind::kLanguageModel;
  double other_weight = 1.0;   // weight of class 0 (not answer)
  double answer_weight = 1.0;  // weight of class 1 (answer)
  std::string task;            // the task that asks ("qa"), for error messages
};

}  // namespace mnemo
