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

// Drops every parameter's gradient (leaves it undefined), as PyTorch's
// zero_grad(set_to_none=True): the next backward then stores its gradient instead of adding
// it to a zeroed one (LibTorch 1.13's Optimizer::zero_grad() zeroes in place, a pass over every
// gradient, and the backward's accumulation another). AdamW skips a parameter whose gradient
// stays undefined, so one that gets no gradient in a step is not decayed in it either.
void clear_gradients(torch::optim::Optimizer& opt);

// One AdamW step, as opt.step(), with every parameter updated in one pass over its memory
// (kernels/adamw_cpu.h) where all parameters with a gradient, their gradients and their
// moments are contiguous float32 CPU tensors and amsgrad is off; otherwise opt.step(). Writes
// the same state (step, exp_avg, exp_avg_sq) as opt.step(), so checkpoints, load_adamw_state
// and opt.step() carry on from it, and bumps the version counters of what it writes (the
// hashed layers' packed tables see the update). Returns whether the fused path ran.
bool adamw_step(torch::optim::AdamW& opt);

// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// Global L2 norm of the gradients, before clipping; when max_norm > 0 and the norm is
// larger, gradients are scaled to max_norm. A NaN/Inf norm leaves gradients unchanged.
// Squares are summed in double (contiguous float32 CPU gradients by
// kernels::sum_of_squares_cpu, in one pass; others through a float64 copy).
double clip_grad_norm(torch::nn::Module& model, double max_norm);

// AdamW state of every parameter that has one, named "optim.<param>.exp_avg",
// "optim.<param>.exp_avg_sq", "optim.<param>.step" (I64 [1]).
inline constexpr const char* kOptimPrefix = "optim.";
io::NamedTensors adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model);
// Restores what adamw_state wrote (other names are ignored). Throws std::invalid_argument
// naming a tensor whose shape does not match its parameter.
void load_adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model, const io::NamedTensors& tensors);

}  // namespace mnemo
