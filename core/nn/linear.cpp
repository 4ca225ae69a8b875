#include "core/nn/linear.h"

#include "core/errors.h"
#include "core/io/config_fields.h"
#include "core/nn/hashed_linear.h"

#include <cmath>

namespace mnemo {

DenseProjectionImpl::DenseProjectionImpl(int64_t in, int64_t out) : ProjectionImpl(in, out) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = register_parameter("weight", torch::empty({out, in}).uniform_(-bound, bound));
  bias = register_parameter("bias", torch::empty({out}).uniform_(-bound, bound));
}

torch::Tensor DenseProjectionImpl::forward(const torch::Tensor& x) { return torch::nn::functional::linear(x, weight, bias); }

Projection make_projection(int64_t in, int64_t out, const LinearOptions& opt) {
  if (opt.kind == "dense") return std::make_shared<DenseProjectionImpl>(in, out);
  if (opt.kind == "hashed") return std::make_shared<HashedProjectionImpl>(in, out, opt.hash_bits, opt.hash_temperature);
  check_choice("linear", opt.kind, {"dense", "hashed"});  // throws: it is neither
  return nullptr;
}

Projection register_projection(torch::nn::Module& parent, const std::string& name, Projection p) {
  parent.register_module(name, p);
  return p;
}

}  // namespace mnemo
