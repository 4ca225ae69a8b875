// Tracer and TraceSpec: named tensors captured from a model step (docs/architecture.md#data-flow, docs/formats.md#trace-keys).
//
// A model asks `tracer && tracer->wants(key)` before it materialises anything for a key,
// so tracing costs nothing when the tracer is null or the spec does not ask for the key.
// `put` stores a detached, contiguous CPU copy; the model's own tensors are never aliased.
#pragma once
#include "core/trace/keys.h"
#include "core/trace/slot_types.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace mnemo {

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


}  // namespace mnemo
