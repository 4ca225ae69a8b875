#include "core/nn/attention.h"

#include "core/nn/torch_compat.h"

#include <limits>

namespace mnemo {

torch::Tensor causal_mask(int64_t t, torch::Device device) {
  auto m = torch::full({t, t}, -std::numeric_limits<float>::infinity(), torch::TensorOptions().device(device));
  return torch::triu(m, 1);
}

torch::Tensor key_padding_mask(const torch::Tensor& valid) {
  TORCH_CHECK(valid.dim() == 2 && valid.scalar_type() == torch::kBool, "valid must be [B, T] bool");
  auto m = torch::zeros(valid.sizes(), torch::TensorOptions().dtype(torch::kFloat32).device(valid.device()));
  m.masked_fill_(valid.logical_not(), -std::numeric_limits<float>::infinity());
  return m.unsqueeze(1).unsqueeze(1);
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t dim_, int64_t heads_, const LinearOptions& lin)
    : dim(dim_), heads(heads_), head_dim(dim_ / heads_) {
  TORCH_CHECK(heads_ > 0 && dim_ % heads_ == 0, "dim ", dim_, " must be divisible by heads ", heads_);
  q = register_projection(*this, "q", make_projection(dim, dim, lin));
  k = register_projection(*this, "k", make_projection(dim, dim, lin));
  v = register_projection(*this, "v", make_projection(dim, dim, lin));
  o = register_projection(*this, "o", make_projection(dim, dim, lin));
}

torch::Tensor MultiHeadAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
}

torch::Tensor MultiHeadAttentionImpl::merge_heads(const torch::Tensor& x) const {
  return x.transpose(1, 2).contiguous().view({x.size(0), x.size(2), dim});
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& kv,
                                              const torch::Tensor& mask, torch::Tensor* weights) {
  auto qh = split_heads(q->forward(query));
  auto kh = split_heads(k->forward(kv));
  auto vh = split_heads(v->forward(kv));
  return o->forward(merge_heads(attention_core(qh, kh, vh, mask, weights)));
}

FeedForwardImpl::FeedForwardImpl(int64_t dim, int64_t ff, const LinearOptions& lin) {
  if (lin.kind == "hashed") {
    block = register_module("block", MemoryBlock(dim, lin.hash_bits, lin.hash_temperature, /*input_norm=*/false));
    return;
  }
  fc1 = register_projection(*this, "fc1", make_projection(dim, ff, lin));
  fc2 = register_projection(*this, "fc2", make_projection(ff, dim, lin));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  if (block) return block->forward(x);
  return fc2->forward(torch::gelu(fc1->forward(x)));
}

}  // namespace mnemo
