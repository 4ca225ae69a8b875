// Optimizer helpers: AdamW with decay / no-decay parameter groups, learning-rate setting,
// gradient-norm clipping, and AdamW state by parameter name (for checkpoints).
#pragma once
#include "core/io/safetensors.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

namespace mnemo {

struct AdamWSettings {
  double lr = 1e-3;
  double weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// AdamW over the model's parameters in two groups: weight decay on matrices of projections
// and heads (2-D ".weight"), none on biases, norms, embeddings and memory / slot vectors.
std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const AdamWSettings& s);

// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// Global L2 norm of the gradients, before clipping; when max_norm > 0 and the norm is
// larger, gradients are scaled to max_norm. A NaN/Inf norm leaves gradients unchanged.
double clip_grad_norm(torch::nn::Module& model, double max_norm);

// AdamW state of every parameter that has one, named "optim.<param>.exp_avg",
// "optim.<param>.exp_avg_sq", "optim.<param>.step" (I64 [1]).
inline constexpr const char* kOptimPrefix = "optim.";
io::NamedTensors adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model);
// Restores what adamw_state wrote (other names are ignored). Throws std::invalid_argument
// naming a tensor whose shape does not match its parameter.
void load_adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model, const io::NamedTensors& tensors);

}  // namespace mnemo
