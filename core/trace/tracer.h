// Tracer and TraceSpec: named tensors captured from a model step (DESIGN §2, §3.6).
//
// A model asks `tracer && tracer->wants(key)` before it materialises anything for a key,
// so tracing costs nothing when the tracer is null or the spec does not ask for the key.
// `put` stores a detached, contiguous CPU copy; the model's own tensors are never aliased.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace mnemo {

// Slot-type thresholds on the writer's self-attention mass (mean over heads).
// retain: self >= retain_min; overwrite: self <= overwrite_max; mix: between.
struct SlotThresholds {
  float retain_min = 0.9f;
  float overwrite_max = 0.1f;
};

// Which keys to capture. A pattern is an exact key, a prefix ending in '*'
// ("memformer.read_attn.*"), or "*" for everything.
struct TraceSpec {
  std::vector<std::string> patterns;
  SlotThresholds thresholds;

  static TraceSpec none() { return {}; }
  static TraceSpec all() { return TraceSpec{{"*"}, {}}; }
  static TraceSpec of(std::vector<std::string> keys) { return TraceSpec{std::move(keys), {}}; }
  bool wants(const std::string& key) const;
  bool empty() const { return patterns.empty(); }
};

// One step's captured tensors, keyed by canonical trace key.
struct Trace {
  std::map<std::string, torch::Tensor> tensors;

  bool has(const std::string& key) const { return tensors.count(key) != 0; }
  // Throws std::out_of_range naming the key when absent.
  const torch::Tensor& at(const std::string& key) const;
  // Keys that start with `prefix`, in sorted order.
  std::vector<std::string> keys_with_prefix(const std::string& prefix) const;
};

class Tracer {
 public:
  explicit Tracer(TraceSpec spec) : spec_(std::move(spec)) {}
  bool wants(const std::string& key) const { return spec_.wants(key); }
  const TraceSpec& spec() const { return spec_; }
  // Stores a detached contiguous CPU copy of `t` under `key` (overwrites an earlier one).
  void put(const std::string& key, const torch::Tensor& t);
  // Stores only if wanted; returns whether it stored.
  bool put_if_wanted(const std::string& key, const torch::Tensor& t);
  const Trace& trace() const { return trace_; }
  Trace take() { return std::move(trace_); }
  void clear() { trace_.tensors.clear(); }

 private:
  TraceSpec spec_;
  Trace trace_;
};

// Canonical keys (DESIGN §3.6).
namespace keys {
inline constexpr const char* kInputTokens = "input.tokens";
inline constexpr const char* kInputOffsets = "input.offsets";
inline constexpr const char* kLmLoss = "lm.loss";
inline constexpr const char* kWriterAttn = "memformer.writer_attn";
inline constexpr const char* kReadAttnPrefix = "memformer.read_attn.";
inline constexpr const char* kMemoryPrev = "memformer.memory_prev";
inline constexpr const char* kMemory = "memformer.memory";
inline constexpr const char* kForgetNorm = "memformer.forget_norm";
inline constexpr const char* kSlotType = "memformer.slot_type";
}  // namespace keys

}  // namespace mnemo
