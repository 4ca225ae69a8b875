// Multi-head attention with optional capture of the attention weights, and masks.
#pragma once
#include "core/nn/hashed_linear.h"
#include "core/nn/linear.h"

#include <torch/torch.h>

namespace mnemo {

// Additive masks (0 where allowed, -inf where not), float32.
// causal_mask(T) -> [T, T]; key_padding_mask(valid [B, Tk] bool) -> [B, 1, 1, Tk].
torch::Tensor causal_mask(int64_t t, torch::Device device);
torch::Tensor key_padding_mask(const torch::Tensor& valid);

struct MultiHeadAttentionImpl : torch::nn::Module {
  MultiHeadAttentionImpl(int64_t dim, int64_t heads, const LinearOptions& lin = {});
  // query [B, Tq, d], kv [B, Tk, d], mask additive broadcastable to [B, H, Tq, Tk] (or
  // undefined). When `weights` is non-null it receives the probabilities [B, H, Tq, Tk].
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& kv, const torch::Tensor& mask,
                        torch::Tensor* weights = nullptr);
  torch::Tensor split_heads(const torch::Tensor& x) const;   // [B, T, d] -> [B, H, T, dh]
  torch::Tensor merge_heads(const torch::Tensor& x) const;   // [B, H, T, dh] -> [B, T, d]

  int64_t dim, heads, head_dim;
  Projection q, k, v, o;
};
TORCH_MODULE(MultiHeadAttention);

// Position-wise feed-forward: Linear(d, ff) -> GELU -> Linear(ff, d). With lin.kind ==
// "hashed" it is MemoryFormer's Memory Block instead (core/nn/hashed_linear.h; module
// "block", width (hash_bits + 2) * dim / hash_bits, `ff` unused; fc1/fc2 stay null). Its
// first Norm is left out: callers are pre-LayerNorm blocks (Memformer's ln_ffn) that
// normalise x before the FFN; a caller that does not must add that Norm itself.
struct FeedForwardImpl : torch::nn::Module {
  FeedForwardImpl(int64_t dim, int64_t ff, const LinearOptions& lin = {});
  torch::Tensor forward(const torch::Tensor& x);
  Projection fc1, fc2;
  MemoryBlock block{nullptr};
};
TORCH_MODULE(FeedForward);

}  // namespace mnemo
