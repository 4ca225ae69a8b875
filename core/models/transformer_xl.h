// Transformer-XL pieces (Dai et al. 2019; docs/models.md#transformer-xl): sinusoidal relative position
// embeddings and multi-head attention with relative positions,
//   A_ij = (q_i + u) . k_j + (q_i + v) . W_r R_{pos(i) - pos(j)}
// used by every decoder-only model (core/models/decoder_lm.h). Positions live in one frame
// shared by queries and keys (cache first, then the current sequence), so a distance may be
// negative (memory tokens that see later positions); the sinusoid table covers both signs.
// The position term is computed per query over the window of distances it needs (an
// unfold of the projected table), never over all distances for every query.
#pragma once
#include "core/nn/linear.h"

#include <torch/torch.h>

namespace mnemo {

// Sinusoidal embedding [n, dim] of the float positions `pos` [n]: [sin(p w_i), cos(p w_i)]
// with w_i = 10000^(-2i/dim). dim must be even.
torch::Tensor sinusoid_embedding(const torch::Tensor& pos, int64_t dim);

// The relative distances of one step, shared by all layers. Keys are [prefix | queries]:
// query i sits at key position tk - tq + i, so its distances to keys 0..tk-1 run from
// tk - tq + i down to i - tq + 1. `table` lists every distance once, in descending order
// from tk - 1 to -(tq - 1) (R = tk + tq - 1 rows), so query i uses rows tq-1-i .. tq-1-i+tk-1.
struct RelativePositions {
  torch::Tensor table;  // [R, d] sinusoid embeddings of the distances, descending
  int64_t tq = 0, tk = 0;
};
RelativePositions relative_positions(int64_t tq, int64_t tk, int64_t dim, torch::Device device);

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
