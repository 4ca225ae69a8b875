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

#include <memory>
#include <string>

namespace mnemo {

struct MemoryLayerOptions {
  int64_t bits = 8;            // tau, 1..16
  double temperature = 1.0;    // t > 0
  // Bit-identical table gradients run to run. The CPU path always is; on CUDA this selects
  // the sort-based kernel instead of atomics (so does torch::use_deterministic_algorithms).
  bool deterministic = false;
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
