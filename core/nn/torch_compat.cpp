#include "core/nn/torch_compat.h"

#include <cmath>

namespace mnemo {

namespace {
thread_local bool t_explicit_attention = false;
}

ExplicitAttentionScope::ExplicitAttentionScope() : previous_(t_explicit_attention) { t_explicit_attention = true; }
ExplicitAttentionScope::~ExplicitAttentionScope() { t_explicit_attention = previous_; }

void lazy_init_cuda() {
  if (!torch::cuda::is_available()) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
  at::globalContext().lazyInitCUDA();
#endif
}

torch::Tensor attention_core(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, torch::Tensor* weights) {
#if TORCH_VERSION_MAJOR >= 2
  if (!weights && !t_explicit_attention) {
    return at::scaled_dot_product_attention(q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt);
  }
#endif
  auto logits = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (mask.defined()) logits = logits + mask;
  auto probs = torch::softmax(logits, -1);
  if (weights) *weights = probs;
  return torch::matmul(probs, v);
}

}  // namespace mnemo
