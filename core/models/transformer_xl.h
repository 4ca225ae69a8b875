// Transformer-XL pieces (Dai et al. 2019; DESIGN §3.3): sinusoidal relative position
// embeddings and multi-head attention with relative positions,
//   A_ij = (q_i + u) . k_j + (q_i + v) . W_r R_{pos(i) - pos(j)}
// used by every decoder-only model (core/models/decoder_lm.h). Positions live in one frame
// shared by queries and keys (cache first, then the current sequence), so a distance may be
// negative (memory tokens that see later positions); the sinusoid table covers both signs.
#pragma once
#include "core/nn/linear.h"

#include <torch/torch.h>

namespace mnemo {

// Sinusoidal embedding [n, dim] of the float positions `pos` [n]: [sin(p w_i), cos(p w_i)]
// with w_i = 10000^(-2i/dim). dim must be even.
torch::Tensor sinusoid_embedding(const torch::Tensor& pos, int64_t dim);

// The relative distances of one step, shared by all layers.
struct RelativePositions {
  torch::Tensor table;  // [R, d] sinusoid of every distance that occurs (dmin..dmax)
  torch::Tensor index;  // [Tq, Tk] int64: row of `table` for query i and key j
};
// Queries at positions q_pos [Tq], keys at k_pos [Tk] (int64, one frame).
RelativePositions relative_positions(const torch::Tensor& q_pos, const torch::Tensor& k_pos, int64_t dim);

struct RelMultiHeadAttentionImpl : torch::nn::Module {
  RelMultiHeadAttentionImpl(int64_t dim, int64_t heads, const LinearOptions& lin = {});
  // query [B, Tq, d], kv [B, Tk, d], mask additive broadcastable to [B, H, Tq, Tk]. When
  // `weights` is non-null it receives the probabilities [B, H, Tq, Tk].
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& kv, const RelativePositions& rel,
                        const torch::Tensor& mask, torch::Tensor* weights = nullptr);

  int64_t dim, heads, head_dim;
  Projection q, k, v, o, r;  // r = W_r, the projection of the position table
  torch::Tensor u_bias, v_bias;  // [H, dh]: the global content and position biases u, v
};
TORCH_MODULE(RelMultiHeadAttention);

}  // namespace mnemo
