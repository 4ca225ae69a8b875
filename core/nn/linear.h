// Projections: every Linear in attention and FFN is built here, so one config switch
// makes them dense or MemoryFormer-hashed (docs/models.md#memoryformer). Output heads stay dense and use
// torch::nn::Linear directly.
#pragma once
#include "core/nn/linear_options.h"

#include <torch/torch.h>

#include <memory>
#include <string>

namespace mnemo {

// LayerNorm over the last dimension d, eps 1e-5, affine (docs/models.md#common-building-blocks).
inline torch::nn::LayerNorm layer_norm(int64_t d) { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})); }


// A y = f(x) projection d_in -> d_out over the last dimension.
class ProjectionImpl : public torch::nn::Module {
 public:
  ProjectionImpl(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  virtual std::string kind() const = 0;
  int64_t in_features, out_features;
};
using Projection = std::shared_ptr<ProjectionImpl>;

// Dense x W^T + b. Parameters are named "weight" [out, in] and "bias" [out], so module
// paths read like torch::nn::Linear's ("encoder.0.self_attn.q.weight"). Initialised like
// torch::nn::Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
class DenseProjectionImpl : public ProjectionImpl {
 public:
  DenseProjectionImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::string kind() const override { return "dense"; }
  torch::Tensor weight, bias;
};

// Builds a dense or hashed projection. Throws ConfigError naming the field for invalid
// settings (unknown kind; hashed with in % hash_bits != 0 or hash_bits outside 1..16).
Projection make_projection(int64_t in, int64_t out, const LinearOptions& opt);

// Registers `p` under `name` in `parent` and returns it (the idiom of register_module).
Projection register_projection(torch::nn::Module& parent, const std::string& name, Projection p);

}  // namespace mnemo
