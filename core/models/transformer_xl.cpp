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

RelativePositions relative_positions(const torch::Tensor& q_pos, const torch::Tensor& k_pos, int64_t dim) {
  auto dist = q_pos.unsqueeze(1) - k_pos.unsqueeze(0);  // [Tq, Tk]
  const int64_t dmin = dist.min().item<int64_t>(), dmax = dist.max().item<int64_t>();
  RelativePositions r;
  r.table = sinusoid_embedding(torch::arange(dmin, dmax + 1, q_pos.options()), dim);
  r.index = dist - dmin;
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
  TORCH_CHECK(rel.index.size(0) == tq && rel.index.size(1) == tk, "relative positions are [", rel.index.size(0), ", ",
              rel.index.size(1), "] but attention is ", tq, " x ", tk);
  auto split = [&](const torch::Tensor& x, int64_t t) { return x.view({b, t, heads, head_dim}).transpose(1, 2); };
  auto qh = split(q->forward(query), tq);  // [B, H, Tq, dh]
  auto kh = split(k->forward(kv), tk);
  auto vh = split(v->forward(kv), tk);
  const int64_t nr = rel.table.size(0);
  auto rh = r->forward(rel.table).view({nr, heads, head_dim}).permute({1, 2, 0});  // [H, dh, R]
  // Position term (q + v) . r for every distance, then picked per (i, j).
  auto bd = torch::matmul(qh + v_bias.unsqueeze(1), rh.unsqueeze(0));  // [B, H, Tq, R]
  bd = bd.gather(3, rel.index.unsqueeze(0).unsqueeze(0).expand({b, heads, tq, tk}));
  // The content term (q + u) . k goes through the shared attention core; the position term
  // (scaled like it) rides in the additive mask.
  auto bias = bd / std::sqrt(static_cast<double>(head_dim));
  if (mask.defined()) bias = bias + mask;
  auto out = attention_core(qh + u_bias.unsqueeze(1), kh, vh, bias, weights);  // [B, H, Tq, dh]
  return o->forward(out.transpose(1, 2).contiguous().view({b, tq, dim}));
}

}  // namespace mnemo
