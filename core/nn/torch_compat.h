// The one place where LibTorch-version-specific code lives (docs/architecture.md#build).
#pragma once
#include <torch/torch.h>
#include <torch/version.h>

namespace mnemo {

// softmax(q k^T / sqrt(d_h) + mask) v for q [B,H,Tq,dh], k/v [B,H,Tk,dh], mask additive
// float broadcastable to [B,H,Tq,Tk] or undefined. When `weights` is non-null the
// attention probabilities are returned there, and the explicit path is taken; otherwise,
// on LibTorch >= 2, the fused scaled-dot-product kernel may be used.
torch::Tensor attention_core(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, torch::Tensor* weights);

// While one is alive on this thread, attention_core takes the explicit path even when no
// weights are asked for. The stepping engine holds one for every step, so a memory state's
// bits do not depend on what was traced: the fused kernel rounds differently, and jump(n)
// (untraced steps, then one traced) must equal n traced steps bit for bit
// (docs/architecture.md#data-flow).
class ExplicitAttentionScope {
 public:
  ExplicitAttentionScope();
  ~ExplicitAttentionScope();
  ExplicitAttentionScope(const ExplicitAttentionScope&) = delete;
  ExplicitAttentionScope& operator=(const ExplicitAttentionScope&) = delete;

 private:
  bool previous_;
};

// Initialises LibTorch's CUDA state (the caching allocator among it) if it is not yet: its
// statistics calls throw "Invalid device argument" before any CUDA tensor was made
// (LibTorch >= 2). No-op without CUDA.
void lazy_init_cuda();

// CUDA devices LibTorch sees: 0 without CUDA. An int (2.x's device_count() is a DeviceIndex,
// int8_t, which streams as a character).
inline int cuda_devices() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

// Key of parameter `p` in torch::optim::Optimizer::state(): a string in LibTorch 1.x, the
// TensorImpl pointer in 2.x.
inline auto optimizer_state_key(const torch::Tensor& p) {
#if TORCH_VERSION_MAJOR >= 2
  return static_cast<void*>(p.unsafeGetTensorImpl());
#else
  return c10::guts::to_string(p.unsafeGetTensorImpl());
#endif
}

inline constexpr int kTorchMajor = TORCH_VERSION_MAJOR;
inline constexpr int kTorchMinor = TORCH_VERSION_MINOR;

}  // namespace mnemo
