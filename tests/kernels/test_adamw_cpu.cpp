// The optimizer-step kernels (kernels/adamw_cpu.h) and the trainer's use of them
// (core/train/optim.h): the three CPU paths bit for bit, one fused AdamW step against
// torch::optim::AdamW's, state that carries on either way and round-trips through
// adamw_state, the fallback, the version counters, and the sum of squares behind clipping.
// torch / core headers come before doctest (Debian LibTorch's glog defines CHECK).
#include "core/nn/torch_compat.h"
#include "core/train/optim.h"
#include "kernels/adamw_cpu.h"
#include "kernels/hashed_lookup_cpu.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <torch/version.h>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace mnemo;
using kernels::CpuIsa;

namespace {

#if TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR == 13
constexpr double kExact = 0.0;  // the LibTorch the kernel's order of operations was matched to
#else
constexpr double kExact = 1e-6;
#endif

struct IsaGuard {
  CpuIsa saved = kernels::cpu_isa();
  ~IsaGuard() { kernels::set_cpu_isa(saved); }
};

// max |a - b| / max |b|.
double rel(const torch::Tensor& a, const torch::Tensor& b) {
  const double den = std::max(b.abs().max().item<double>(), 1e-30);
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / den;
}

// A small model's worth of parameters in the trainer's two groups (decayed and not).
struct Params {
  std::vector<torch::Tensor> decay, plain;
  std::vector<torch::Tensor> all() const {
    std::vector<torch::Tensor> v = decay;
    v.insert(v.end(), plain.begin(), plain.end());
    return v;
  }
};

Params make_params(uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed));
  Params p;
  p.decay = {torch::randn({37, 19}).requires_grad_(), torch::randn({4, 8, 33}).requires_grad_()};
  p.plain = {torch::randn({1001}).requires_grad_(), torch::randn({3}).requires_grad_()};
  return p;
}

Params clone(const Params& src) {
  Params p;
  for (const auto& t : src.decay) p.decay.push_back(t.detach().clone().requires_grad_());
  for (const auto& t : src.plain) p.plain.push_back(t.detach().clone().requires_grad_());
  return p;
}

std::unique_ptr<torch::optim::AdamW> make_opt(const Params& p, double lr) {
  auto base = torch::optim::AdamWOptions(lr).betas(std::make_tuple(0.9, 0.999)).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto d = std::make_unique<torch::optim::AdamWOptions>(base);
  d->weight_decay(0.1);
  groups.emplace_back(p.decay, std::move(d));
  auto n = std::make_unique<torch::optim::AdamWOptions>(base);
  n->weight_decay(0.0);
  groups.emplace_back(p.plain, std::move(n));
  return std::make_unique<torch::optim::AdamW>(groups, base);
}

// The same gradients on both sets, drawn from step's seed (some large, some tiny).
void set_grads(Params& a, Params& b, int step) {
  torch::manual_seed(1000 + step);
  const auto pa = a.all(), pb = b.all();
  for (size_t i = 0; i < pa.size(); ++i) {
    torch::Tensor g = torch::randn(pa[i].sizes()) * std::pow(10.0, static_cast<double>(i % 3) - 1.0);
    pa[i].mutable_grad() = g.clone();
    pb[i].mutable_grad() = g.clone();
  }
}

double worst_state_diff(torch::optim::AdamW& oa, const Params& a, torch::optim::AdamW& ob, const Params& b) {
  double worst = 0;
  const auto pa = a.all(), pb = b.all();
  for (size_t i = 0; i < pa.size(); ++i) {
    worst = std::max(worst, rel(pa[i].detach(), pb[i].detach()));
    const auto& sa = static_cast<torch::optim::AdamWParamState&>(*oa.state().at(optimizer_state_key(pa[i])));
    const auto& sb = static_cast<torch::optim::AdamWParamState&>(*ob.state().at(optimizer_state_key(pb[i])));
    REQUIRE(sa.step() == sb.step());
    worst = std::max(worst, rel(sa.exp_avg(), sb.exp_avg()));
    worst = std::max(worst, rel(sa.exp_avg_sq(), sb.exp_avg_sq()));
  }
  return worst;
}

}  // namespace

TEST_CASE("adamw kernel: one element against the formula, computed by hand") {
  // p = 2, g = 0.5, m = v = 0, step 1, lr 0.1, wd 0.01, betas (0.9, 0.999), eps 1e-8:
  // p' = 2 (1 - 0.001) = 1.998; m = 0.05; v = 0.00025; m_hat = 0.5, v_hat = 0.25;
  // p'' = 1.998 - 0.1 * 0.5 / (0.5 + 1e-8) = 1.898 (to float rounding).
  float p = 2.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  const auto c = kernels::adamw_coefficients(0.1, 0.9, 0.999, 1e-8, 0.01, 1);
  kernels::adamw_update_cpu(&p, &g, &m, &v, 1, c);
  CHECK(m == doctest::Approx(0.05).epsilon(1e-6));
  CHECK(v == doctest::Approx(0.00025).epsilon(1e-5));
  CHECK(p == doctest::Approx(1.898).epsilon(1e-6));
}

TEST_CASE("adamw kernel: AVX-512, AVX2 and portable paths give the same bits") {
  IsaGuard guard;
  const int64_t n = 4099;  // not a multiple of 16 or 32: tails on every path
  torch::manual_seed(7);
  const torch::Tensor p0 = torch::randn({n}), g = torch::randn({n}) * 3, m0 = torch::randn({n}) * 0.1,
                      v0 = torch::rand({n}) * 0.01;
  const auto c = kernels::adamw_coefficients(3e-3, 0.9, 0.98, 1e-6, 0.05, 7);
  const CpuIsa paths[] = {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512};
  for (CpuIsa isa : paths)
    if (!kernels::cpu_isa_supported(isa))
      MNEMO_SKIP(std::string("this CPU cannot run the ") + kernels::cpu_isa_name(isa) + " path");
  std::vector<torch::Tensor> outs;
  std::vector<double> sums;
  for (CpuIsa isa : paths) {
    kernels::set_cpu_isa(isa);
    torch::Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
    kernels::adamw_update_cpu(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n,
                              c);
    outs.push_back(torch::cat({p, m, v}));
    sums.push_back(kernels::sum_of_squares_cpu(g.data_ptr<float>(), n));
  }
  for (size_t i = 1; i < outs.size(); ++i) {
    CHECK(torch::equal(outs[i], outs[0]));
    CHECK(sums[i] == sums[0]);
  }
}

TEST_CASE("sum of squares: exact on integers, and equal to a float64 sum to 1e-14") {
  std::vector<float> x(1000);
  double want = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(static_cast<int>(i) - 500);
    want += static_cast<double>(x[i]) * x[i];
  }
  CHECK(kernels::sum_of_squares_cpu(x.data(), static_cast<int64_t>(x.size())) == want);  // 83,333,500 exactly
  CHECK(kernels::sum_of_squares_cpu(x.data(), 0) == 0.0);
  torch::manual_seed(3);
  const torch::Tensor r = torch::randn({100003});
  const double ref = r.to(torch::kFloat64).pow(2).sum().item<double>();
  CHECK(std::abs(kernels::sum_of_squares_cpu(r.data_ptr<float>(), r.numel()) - ref) <= 1e-14 * ref);
}

TEST_CASE("adamw_step: six fused steps give torch::optim::AdamW's bits") {
  Params a = make_params(11), b = clone(a);
  auto oa = make_opt(a, 3e-3), ob = make_opt(b, 3e-3);
  double worst = 0;
  for (int s = 0; s < 6; ++s) {
    set_grads(a, b, s);
    CHECK(adamw_step(*oa));
    ob->step();
    worst = std::max(worst, worst_state_diff(*oa, a, *ob, b));
  }
  // Bit for bit with Debian's LibTorch 1.13 (the same float operations in the same order);
  // another LibTorch may round its ops differently: there, to float rounding.
  MESSAGE("fused vs torch AdamW, worst relative difference over 6 steps: " << worst);
  CHECK(worst <= kExact);
  // A parameter without a gradient is skipped, as torch does: no decay, no step count.
  const torch::Tensor before = a.plain[1].detach().clone();
  set_grads(a, b, 6);
  a.plain[1].mutable_grad() = torch::Tensor();
  CHECK(adamw_step(*oa));
  CHECK(torch::equal(a.plain[1].detach(), before));
  CHECK(static_cast<torch::optim::AdamWParamState&>(*oa->state().at(optimizer_state_key(a.plain[1]))).step() == 6);
}

TEST_CASE("adamw_step: state carries on with torch's step and round-trips through adamw_state") {
  Params a = make_params(5), b = clone(a);
  auto oa = make_opt(a, 1e-2), ob = make_opt(b, 1e-2);
  for (int s = 0; s < 3; ++s) {
    set_grads(a, b, s);
    adamw_step(*oa);
    ob->step();
  }
  // Continue a with torch's own step and b with the fused one: still the same model.
  for (int s = 3; s < 6; ++s) {
    set_grads(a, b, s);
    oa->step();
    adamw_step(*ob);
  }
  CHECK(worst_state_diff(*oa, a, *ob, b) <= kExact);
  // The fused path's state, saved and loaded into a fresh optimizer, continues identically.
  torch::nn::Module holder;
  const auto all = a.all();
  for (size_t i = 0; i < all.size(); ++i) holder.register_parameter("w" + std::to_string(i), all[i]);
  const io::NamedTensors saved = adamw_state(*oa, holder);
  Params c = clone(a);
  auto oc = make_opt(c, 1e-2);
  torch::nn::Module holder_c;
  const auto allc = c.all();
  for (size_t i = 0; i < allc.size(); ++i) holder_c.register_parameter("w" + std::to_string(i), allc[i]);
  load_adamw_state(*oc, holder_c, saved);
  set_grads(a, c, 6);
  adamw_step(*oa);
  adamw_step(*oc);
  CHECK(worst_state_diff(*oa, a, *oc, c) == 0.0);
}

TEST_CASE("adamw_step: bumps version counters, and falls back to torch's step where it cannot fuse") {
  Params a = make_params(2), b = clone(a);
  auto oa = make_opt(a, 1e-3);
  set_grads(a, b, 0);
  const auto v0 = a.decay[0]._version();
  CHECK(adamw_step(*oa));
  CHECK(a.decay[0]._version() > v0);  // a packed-table cache keyed on it repacks

  // A float64 parameter: the whole step is torch's.
  torch::Tensor w = torch::randn({5, 5}, torch::kFloat64).requires_grad_();
  torch::Tensor w2 = w.detach().clone().requires_grad_();
  torch::optim::AdamW o1({w}, torch::optim::AdamWOptions(1e-2)), o2({w2}, torch::optim::AdamWOptions(1e-2));
  const torch::Tensor g = torch::randn({5, 5}, torch::kFloat64);
  w.mutable_grad() = g.clone();
  w2.mutable_grad() = g.clone();
  CHECK_FALSE(adamw_step(o1));
  o2.step();
  CHECK(torch::equal(w.detach(), w2.detach()));
}

TEST_CASE("clip_grad_norm: the norm in double, and the clipping, as before the kernel") {
  torch::nn::Module m;
  torch::manual_seed(9);
  auto p1 = m.register_parameter("a", torch::randn({300, 7}));
  auto p2 = m.register_parameter("b", torch::randn({11}));
  p1.mutable_grad() = torch::randn({300, 7}) * 2;
  p2.mutable_grad() = torch::randn({11});
  const double want = std::sqrt(p1.grad().to(torch::kFloat64).pow(2).sum().item<double>() +
                                p2.grad().to(torch::kFloat64).pow(2).sum().item<double>());
  const torch::Tensor g1 = p1.grad().clone();
  const double norm = clip_grad_norm(m, 1.0);
  CHECK(std::abs(norm - want) <= 1e-14 * want);
  const float scale = static_cast<float>(1.0 / (norm + 1e-6));
  CHECK(torch::equal(p1.grad(), g1 * scale));
}

TEST_CASE("bench optimizer: a row per config with both sides' times and equal weights (bitwise on LibTorch 1.13) - bad flags exit 2") {
  const std::string cfg = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";
  auto r = test::run_cli("bench optimizer --repeats 2 --configs " + cfg);
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("torch AdamW") != std::string::npos);
  const auto row = r.output.find("copy-rmt-tiny.json");
  REQUIRE(row != std::string::npos);
  const std::string line = r.output.substr(row, r.output.find('\n', row) - row);
  // Both AdamW paths end with the same weights: bit for bit on the LibTorch whose kernels the
  // fused step follows (kernels/adamw_cpu.h); within rounding on another (PyTorch 2.11's wheel
  // on an AVX-512 host printed NO there).
  if (mnemo::kTorchMajor < 2) {
    CHECK(line.find(" yes") != std::string::npos);
  } else if (line.find(" yes") == std::string::npos) {
    const auto at = line.find("NO (max relative difference ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(line.substr(at + 28)) <= 1e-5);
  }
  CHECK(line.find("fell back") == std::string::npos);
  auto bad = test::run_cli("bench optimizer --repeats 0");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--repeats must be in 1..10000") != std::string::npos);
  auto missing = test::run_cli("bench optimizer --configs /nonexistent.json");
  CHECK(missing.code == 2);
  CHECK(missing.output.find("/nonexistent.json") != std::string::npos);
}
