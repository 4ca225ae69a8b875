// MemoryFormer hashed layers (MemoryFormer (docs/references.md#memoryformer) §2.2-2.4, Eq. 12-14; docs/models.md#memoryformer).
//
// Memory Layer (d_in -> d_out, tau bits, temperature t): x is split into K = d_in / tau
// chunks z_k; each chunk picks the row h(z_k) = sum_i [z_ki >= 0] 2^i of its own table T_k
// (2^tau rows x d_out) with weight p(z_k) = prod_i 1 / (1 + exp(-2 |z_ki| / t)):
//     y = sum_k p(z_k) T_k[h(z_k)]                                           (Eq. 13)
// Gradients (Eq. 14): dT_k[h(z_k)] += p(z_k) dy;  dz_k = (dy . T_k[h(z_k)]) dp/dz_k.
// Zero counts as positive, both in h and in the sign used by dp/dz (a one-sided derivative
// at z = 0). The CPU path gathers rows (never a one-hot product) on at::parallel_for
// threads; CUDA tensors go to kernels/hashed_lookup.cu when the build has CUDA.
//
// Memory Block (replaces the FFN when "linear": "hashed"): Norm -> Memory Layer (d -> (tau+2)K,
// tau bits) -> Norm -> Memory Layer ((tau+2)K -> d, tau+2 bits); no activation.
#pragma once
#include "core/nn/linear.h"
#include "core/trace/tracer.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mnemo {

// The tables of a Memory Layer kept in the CPU kernels' packed layout (kernels/hashed_lookup_cpu.h,
// "tables kept in the kernels' layout"), so that calls on unchanged tables do not pack them
// again. get() returns the packed copy of `tables`, packing it when the cache holds none for
// this tensor or the tensor was written since:
//   * the same tensor: the same TensorImpl and storage (the cache holds references to both,
//     so neither address can be reused by another tensor while it is cached), storage offset,
//     sizes, strides and dtype;
//   * not written since: the tensor's version counter (tensor._version()) is the one it had
//     when packed. Every in-place op bumps it - the optimizer's update (torch::optim works on
//     the parameter in place under NoGradGuard), a checkpoint load (copy_), add_, zero_, also
//     under NoGradGuard or InferenceMode - so the next call sees the new values.
// Writes that bypass the version counter are not seen: through data_ptr(), through an alias
// made with .data() or torch::from_blob. Such a writer must call invalidate(). Inference
// tensors (made under InferenceMode) have no version counter and are never cached.
// The packed copy has the size of the tables (rounded up to 32 columns); a repack writes a
// fresh buffer when a backward still holds the previous one, else the previous one in place.
// Thread-safe; CPU tables (float32, bfloat16, float16) only.
class PackedTablesCache {
 public:
  // The packed tables, or an undefined tensor when `tables` cannot be cached (not on the
  // CPU, float64, or an inference tensor).
  torch::Tensor get(const torch::Tensor& tables);
  // The next get() packs again (into the same buffer when nobody else holds it).
  void invalidate();
  int64_t packs() const;  // times get() packed (tests, benchmarks)

 private:
  mutable std::mutex mu_;
  torch::Tensor source_, packed_;  // the tensor packed (a reference), its packed copy
  c10::Storage storage_;           // source_'s storage when packed (a reference)
  uint32_t version_ = 0;           // source_._version() when packed
  int64_t offset_ = 0;
  std::vector<int64_t> sizes_, strides_;
  c10::ScalarType dtype_ = c10::ScalarType::Undefined;
  int64_t packs_ = 0;
};

struct MemoryLayerOptions {
  int64_t bits = 8;            // tau, 1..16
  double temperature = 1.0;    // t > 0
  // Bit-identical table gradients run to run. The CPU path always is; on CUDA this selects
  // the sort-based kernel instead of atomics (so does torch::use_deterministic_algorithms).
  bool deterministic = false;
  // CPU: where the tables are kept packed between calls (nullptr: packed inside every call,
  // forward and input gradient each). The results are the same bits either way. The packed
  // copy taken by a forward is the one its backward uses.
  PackedTablesCache* packed = nullptr;
};

// One Memory Layer call. bucket and p carry no gradient.
struct MemoryLayerOutput {
  torch::Tensor y;       // [..., d_out], x's leading dimensions, x's dtype
  torch::Tensor bucket;  // [N, K] int32, N = x.numel() / d_in
  torch::Tensor p;       // [N, K], y's dtype
};

// Eq. 13 forward as a torch::autograd::Function whose backward is Eq. 14 (first-order only:
// the backward itself is not differentiable). x [..., d_in] and tables [K, 2^bits, d_out]
// with K * bits = d_in, on the same device. x float32 with tables float32, bfloat16 or
// float16 (bf16/fp16 are read as fp32 and accumulated in fp32: half the table bytes; the
// table gradient is computed in fp32 and comes back in the tables' dtype), or, on the CPU
// only, x and tables both float64. Violations throw c10::Error.
MemoryLayerOutput memory_layer(const torch::Tensor& x, const torch::Tensor& tables, const MemoryLayerOptions& opt);

// Throws ConfigError naming the field when a hashed projection d_in -> d_out with these
// settings is impossible: hash_bits outside 1..16, d_in not a multiple of hash_bits,
// hash_temperature not > 0.
void validate_hash_settings(int64_t in, int64_t bits, double temperature);

// A Projection that is a Memory Layer. Parameter "tables" [K, 2^bits, out], so its module
// path reads "encoder.0.self_attn.q.tables". Initialised U(-1/sqrt(K), 1/sqrt(K)) (K rows
// are summed per output, as in_features inputs are in a dense layer).
class HashedProjectionImpl : public ProjectionImpl {
 public:
  // Throws ConfigError (validate_hash_settings).
  HashedProjectionImpl(int64_t in, int64_t out, int64_t bits, double temperature);
  torch::Tensor forward(const torch::Tensor& x) override;
  // forward() plus the bucket codes and p of this call.
  MemoryLayerOutput forward_full(const torch::Tensor& x);
  std::string kind() const override { return "hashed"; }

  // Tracing: while a tracer is set, every forward captures (when the tracer wants them)
  //   hash.<path>.bucket [N, K] int32, hash.<path>.p [N, K] float32 and
  //   hash.<path>.counts [K, 2^bits] int64 (lookups per bucket);
  // a projection called more than once in a step appends rows (bucket, p) and adds counts.
  // Set by attach_hash_tracing; nullptr stops tracing.
  void set_tracer(Tracer* tracer, std::string path);
  Tracer* tracer() const { return tracer_; }
  const std::string& trace_path() const { return trace_path_; }

  int64_t bits, tables_count, buckets;  // tau, K, 2^tau
  double temperature;
  bool deterministic = false;
  torch::Tensor tables;
  // On the CPU, `tables` is kept packed in the kernels' layout between calls and repacked after
  // it changes (in training: once per optimizer step, by the first forward after it).
  std::shared_ptr<PackedTablesCache> packed_tables = std::make_shared<PackedTablesCache>();

 private:
  Tracer* tracer_ = nullptr;
  std::string trace_path_;
};
using HashedProjection = std::shared_ptr<HashedProjectionImpl>;

// The Memory Block on width dim = tau * K. input_norm = false leaves out the first Norm for
// callers whose pre-LayerNorm block already normalised x (FeedForward does this: the
// layer's ln_ffn is that Norm, so hashing sees a zero-mean input either way).
// Throws ConfigError naming hash_bits when dim % bits != 0 or bits + 2 > 16.
struct MemoryBlockImpl : torch::nn::Module {
  MemoryBlockImpl(int64_t dim, int64_t bits, double temperature, bool input_norm = true);
  torch::Tensor forward(const torch::Tensor& x);
  int64_t dim, bits, hidden;  // hidden = (bits + 2) * K
  torch::nn::LayerNorm in_norm{nullptr}, mid_norm{nullptr};
  HashedProjection fc1, fc2;
};
TORCH_MODULE(MemoryBlock);

// Points every HashedProjection under `root` at `tracer` (nullptr detaches), each with its
// module path relative to root ("encoder.0.self_attn.q"). Returns how many it found.
int64_t attach_hash_tracing(torch::nn::Module& root, Tracer* tracer);

// attach_hash_tracing for a scope: attaches in the constructor (when tracer is not null)
// and detaches in the destructor.
class HashTracingScope {
 public:
  HashTracingScope(torch::nn::Module& root, Tracer* tracer);
  ~HashTracingScope();
  HashTracingScope(const HashTracingScope&) = delete;
  HashTracingScope& operator=(const HashTracingScope&) = delete;

 private:
  torch::nn::Module* root_ = nullptr;
};

}  // namespace mnemo
