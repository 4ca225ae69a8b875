#include "core/train/optim.h"

#include "core/nn/torch_compat.h"
#include "kernels/adamw_cpu.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <stdexcept>

namespace mnemo {

namespace {
bool fusable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() &&
         t.layout() == torch::kStrided;
}

bool decays(const std::string& name, const torch::Tensor& p) {
  if (p.dim() != 2) return false;
  const std::string suffix = ".weight";
  if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  return name.find("emb") == std::string::npos;  // tok_emb.weight and the like: no decay
}
}  // namespace

std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const AdamWSettings& s) {
  std::vector<torch::Tensor> decay, plain;
  for (const auto& p : model.named_parameters(true)) {
    if (!p.value().requires_grad()) continue;
    (decays(p.key(), p.value()) ? decay : plain).push_back(p.value());
  }
  auto base = torch::optim::AdamWOptions(s.lr).betas(std::make_tuple(s.beta1, s.beta2)).eps(s.eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(base);
    o->weight_decay(s.weight_decay);
    groups.emplace_back(decay, std::move(o));
  }
  if (!plain.empty()) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(base);
    o->weight_decay(0.0);
    groups.emplace_back(plain, std::move(o));
  }
  return std::make_unique<torch::optim::AdamW>(groups, base);
}

void clear_gradients(torch::optim::Optimizer& opt) {
  for (auto& g : opt.param_groups())
    for (auto& p : g.params())
      if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

bool adamw_step(torch::optim::AdamW& opt) {
  auto& states = opt.state();
  for (auto& group : opt.param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) {
      opt.step();
      return false;
    }
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      bool ok = fusable(p) && fusable(p.grad());
      const auto it = states.find(optimizer_state_key(p));
      if (ok && it != states.end()) {
        const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
        ok = fusable(st.exp_avg()) && fusable(st.exp_avg_sq()) && st.exp_avg().numel() == p.numel() &&
             st.exp_avg_sq().numel() == p.numel();
      }
      if (!ok) {
        opt.step();
        return false;
      }
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = states[optimizer_state_key(p)];
      if (!slot) {  // as torch::optim::AdamW::step creates it
        auto st = std::make_unique<torch::optim::AdamWParamState>();
        st->step(0);
        st->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        st->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(st);
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*slot);
      st.step(st.step() + 1);
      const kernels::AdamWCoefficients c = kernels::adamw_coefficients(
          o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), st.step());
      float* pd = p.data_ptr<float>();
      const float* gd = p.grad().data_ptr<float>();
      float* md = st.exp_avg().data_ptr<float>();
      float* vd = st.exp_avg_sq().data_ptr<float>();
      at::parallel_for(0, p.numel(), int64_t{1} << 16, [&](int64_t b, int64_t e) {
        kernels::adamw_update_cpu(pd + b, gd + b, md + b, vd + b, e - b, c);
      });
      // Written through raw pointers: tell autograd and the hashed layers' packed-table caches.
      p.unsafeGetTensorImpl()->bump_version();
      st.exp_avg().unsafeGetTensorImpl()->bump_version();
      st.exp_avg_sq().unsafeGetTensorImpl()->bump_version();
    }
  }
  return true;
}

double clip_grad_norm(torch::nn::Module& model, double max_norm) {
  double sq = 0;
  std::vector<torch::Tensor> grads;
  for (auto& p : model.parameters()) {
    if (!p.grad().defined()) continue;
    grads.push_back(p.grad());
    if (fusable(p.grad())) sq += kernels::sum_of_squares_cpu(p.grad().data_ptr<float>(), p.grad().numel());
    else sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && std::isfinite(norm) && norm > max_norm) {
    torch::NoGradGuard g;
    const double scale = max_norm / (norm + 1e-6);
    for (auto& gr : grads) gr.mul_(scale);
  }
  return norm;
}

io::NamedTensors adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model) {
  io::NamedTensors out;
  auto& state = opt.state();
  for (const auto& p : model.named_parameters(true)) {
    auto it = state.find(optimizer_state_key(p.value()));
    if (it == state.end()) continue;
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    const std::string base = std::string(kOptimPrefix) + p.key();
    out.emplace_back(base + ".exp_avg", s.exp_avg());
    out.emplace_back(base + ".exp_avg_sq", s.exp_avg_sq());
    out.emplace_back(base + ".step", torch::tensor({s.step()}, torch::kInt64));
  }
  return out;
}

void load_adamw_state(torch::optim::AdamW& opt, const torch::nn::Module& model, const io::NamedTensors& tensors) {
  std::map<std::string, torch::Tensor> by_name(tensors.begin(), tensors.end());
  auto& state = opt.state();
  state.clear();
  for (const auto& p : model.named_parameters(true)) {
    const std::string base = std::string(kOptimPrefix) + p.key();
    auto a = by_name.find(base + ".exp_avg"), b = by_name.find(base + ".exp_avg_sq"), s = by_name.find(base + ".step");
    if (a == by_name.end() || b == by_name.end() || s == by_name.end()) continue;
    if (a->second.sizes() != p.value().sizes() || b->second.sizes() != p.value().sizes())
      throw std::invalid_argument("optimizer state '" + base + "' does not match the parameter's shape");
    auto st = std::make_unique<torch::optim::AdamWParamState>();
    st->exp_avg(a->second.to(p.value().device(), p.value().scalar_type()).clone());
    st->exp_avg_sq(b->second.to(p.value().device(), p.value().scalar_type()).clone());
    st->step(s->second.to(torch::kInt64).reshape({-1})[0].item<int64_t>());
    state[optimizer_state_key(p.value())] = std::move(st);
  }
}

}  // namespace mnemo
