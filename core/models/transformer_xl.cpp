#include "core/models/transformer_xl.h"

#include "core/nn/torch_compat.h"

#include <cmath>

namespace mnemo {

torch::Tensor sinusoid_embedding(const torch::Tensor& pos, int64_t dim) {
  TORCH_CHECK(dim % 2 == 0, "sinusoid_embedding: dim ", dim, " must be even");
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(pos.device());
  auto inv_freq = torch::pow(10000.0, -torch::arange(0, dim, 2, opts) / static_cast<double>(dim));  // [d/2]
  auto angles = pos.to(torch::kFloat32).unsqueeze(1) * inv_freq.unsqueeze(0);                      // [n, d/2]
  return torch::cat({torch::sin(angles), torch::cos(angles)}, 1);
}

RelativePositions relative_positions(int64_t tq, int64_t tk, int64_t dim, torch::Device device) {
  TORCH_CHECK(tq >= 1 && tk >= tq, "relative_positions: need 1 <= tq <= tk, got tq ", tq, ", tk ", tk);
  RelativePositions r;
  r.tq = tq;
  r.tk = tk;
  auto dist = torch::arange(tk - 1, -tq, -1, torch::TensorOptions().dtype(torch::kInt64).device(device));
  r.table = sinusoid_embedding(dist, dim);
  return r;
}

RelMultiHeadAttentionImpl::RelMultiHeadAttentionImpl(int64_t dim_, int64_t heads_, const LinearOptions& lin)
    : dim(dim_), heads(heads_), head_dim(dim_ / heads_) {
  TORCH_CHECK(heads_ > 0 && dim_ % heads_ == 0, "dim ", dim_, " must be divisible by heads ", heads_);
  q = register_projection(*this, "q", make_projection(dim, dim, lin));
  k = register_projection(*this, "k", make_projection(dim, dim, lin));
  v = register_projection(*this, "v", make_projection(dim, dim, lin));
  o = register_projection(*this, "o", make_projection(dim, dim, lin));
  r = register_projection(*this, "r", make_projection(dim, dim, lin));
  u_bias = register_parameter("u_bias", torch::zeros({heads, head_dim}));
  v_bias = register_parameter("v_bias", torch::zeros({heads, head_dim}));
}

torch::Tensor RelMultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& kv,
                                                 const RelativePositions& rel, const torch::Tensor& mask,
                                                 torch::Tensor* weights) {
  const int64_t b = query.size(0), tq = query.size(1), tk = kv.size(1);
  TORCH_CHECK(rel.tq == tq && rel.tk == tk, "relative positions are for ", rel.tq, " x ", rel.tk, " but attention is ",
              tq, " x ", tk);
  auto split = [&](const torch::Tensor& x, int64_t t) { return x.view({b, t, heads, head_dim}).transpose(1, 2); };
  auto qh = split(q->forward(query), tq);  // [B, H, Tq, dh]
  auto kh = split(k->forward(kv), tk);
  auto vh = split(v->forward(kv), tk);
  const int64_t nr = rel.table.size(0);  // R = tq + tk - 1
  auto rh = r->forward(rel.table).view({nr, heads, head_dim}).permute({1, 2, 0});  // [H, dh, R]
  // (q_i + v) . r_n for every query and every table row: one product per head, [B, H, Tq, R].
  auto full = torch::matmul(qh + v_bias.unsqueeze(1), rh).contiguous();
  // Query i needs table rows tq-1-i .. tq-1-i+tk-1 (row n holds distance tk-1-n), i.e. the
  // element (i, j) sits at (tq-1) + i*(R-1) + j of its [Tq, R] plane: a strided view, no copy
  // (rows do not overlap: R-1 >= tk when tq >= 2). The unfolded-window formulation reads the
  // same numbers but copies a [H, Tq, dh, Tk] window and runs H*Tq tiny products.
  const int64_t plane = tq * nr;
  auto bd = full.as_strided({b, heads, tq, tk}, {heads * plane, plane, nr - 1, 1},
                            full.storage_offset() + (tq - 1));  // [B, H, Tq, Tk]
  // The content term (q + u) . k goes through the shared attention core; the position term
  // (scaled like it) rides in the additive mask.
  auto bias = bd / std::sqrt(static_cast<double>(head_dim));
  if (mask.defined()) bias = bias + mask;
  auto out = attention_core(qh + u_bias.unsqueeze(1), kh, vh, bias, weights);  // [B, H, Tq, dh]
  return o->forward(out.transpose(1, 2).contiguous().view({b, tq, dim}));
}

}  // namespace mnemo
