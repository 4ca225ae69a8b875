// The interface every memory model implements (docs/architecture.md#data-flow).
#pragma once
#include "core/data/segment.h"
#include "core/models/capabilities.h"
#include "core/trace/tracer.h"

#include <torch/torch.h>

#include <map>
#include <string>

namespace mnemo {

// A model's recurrent state between segments: named tensors (e.g. "slots" [B, k, d]).
struct MemoryState {
  std::map<std::string, torch::Tensor> tensors;

  bool empty() const { return tensors.empty(); }
  const torch::Tensor& at(const std::string& key) const;
  // Deep copy, detached from any graph (the engine keeps these per visited segment).
  MemoryState detached_clone() const;
  // Bit-identical comparison of every tensor (same keys, shapes, dtypes and bytes).
  bool bit_equal(const MemoryState& other) const;
};

// What a segment after the first starts from when the memory is ablated (evaluate_model,
// score_document, the Engine's memory benefit).
enum class MemoryAblation {
  kCarried,  // the memory after segment i-1 goes into segment i (what the model is for)
  kReset,    // every segment starts from the initial memory: no earlier text reaches it
  kZeroed,   // floating-point tensors zeroed; integer ones (MTN's source indices) the initial memory's
};
const char* ablation_name(MemoryAblation a);
// The memory a segment i > 0 starts from under `a`, given the memory `carried` after segment
// i-1 and the model's `initial` memory.
MemoryState ablated_memory(MemoryAblation a, const MemoryState& carried, const MemoryState& initial);

struct SegmentOutput {
  torch::Tensor logits;      // [B, L, V] or undefined when there is nothing to predict
  torch::Tensor token_loss;  // [B, L] per-token cross-entropy (0 on masked positions) or undefined
  torch::Tensor loss;        // scalar mean over valid predicted tokens, or undefined
  torch::Tensor loss_sum;    // scalar: sum of the per-token losses (weighted, if the model weights them)
  torch::Tensor loss_count;  // scalar: number (or weight sum) of predicted tokens; loss = loss_sum / loss_count
  MemoryState memory;        // state after this segment
};

class MemoryModelImpl : public torch::nn::Module {
 public:
  virtual ~MemoryModelImpl() = default;
  virtual std::string kind() const = 0;
  // What this kind of model can do (core/models/capabilities.h).
  const ModelCapabilities& capabilities() const { return capabilities_of(kind()); }
  virtual MemoryState initial_memory(int64_t batch) = 0;
  virtual SegmentOutput step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) = 0;
  // Whether `targets` are token ids (language modelling: a plain document supplies them as
  // the next token). False for a token classifier (MTN answer tagging, targets 0/1), whose
  // labels only its task can give: the Engine then steps a document with no targets (no loss).
  virtual bool predicts_tokens() const { return true; }
  // Switches the output head to what a task needs (core/data/segment.h). The default takes
  // kLanguageModel only and throws ConfigError naming the models that can tag tokens for
  // anything else; the MTN family overrides it. Called once on a freshly built model
  // (training, eval, the GUI) with TaskSource::head().
  virtual void set_task_head(const TaskHead& head);
  // Device of the parameters.
  torch::Device device() const;
};

using MemoryModel = std::shared_ptr<MemoryModelImpl>;

}  // namespace mnemo
