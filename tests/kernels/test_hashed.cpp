// MemoryFormer hashed layers (docs/models.md#memoryformer): p(z) identity, bucket codes, forward against a
// naive loop, gradients against finite differences, CUDA against the CPU reference (skipped
// without a GPU), drop-in models, tracing, bucket statistics, figures and bad settings.
// torch / core headers come before doctest (Debian LibTorch's glog defines CHECK).
#include "app/figures/memformer.h"
#include "app/figures/hash.h"
#include "core/engine/engine.h"
#include "core/errors.h"
#include "core/models/factory.h"
#include "core/models/memformer.h"
#include "core/nn/attention.h"
#include "core/nn/hashed_linear.h"
#include "core/trace/hash_stats.h"
#include "kernels/device_info.h"
#include "kernels/hashed_lookup_cpu.h"
#include "tests/support/skip.h"
#include "tests/support/helpers.h"

#include <torch/cuda.h>

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace mnemo;

namespace {


// Naive Eq. 13 in double, one row and one table at a time.
torch::Tensor naive_forward(const torch::Tensor& x, const torch::Tensor& tables, int64_t tau, double t,
                            torch::Tensor* bucket_out = nullptr, torch::Tensor* p_out = nullptr) {
  auto xd = x.to(torch::kFloat64).reshape({-1, x.size(-1)}).contiguous();
  auto td = tables.to(torch::kFloat64).contiguous();
  const int64_t n = xd.size(0), k = td.size(0), d_out = td.size(2);
  auto y = torch::zeros({n, d_out}, torch::kFloat64);
  auto bucket = torch::zeros({n, k}, torch::kInt32);
  auto p = torch::zeros({n, k}, torch::kFloat64);
  auto xa = xd.accessor<double, 2>();
  auto ta = td.accessor<double, 3>();
  auto ya = y.accessor<double, 2>();
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      int32_t h = 0;
      double pv = 1;
      for (int64_t i = 0; i < tau; ++i) {
        const double z = xa[r][j * tau + i];
        if (z >= 0) h += 1 << i;
        pv *= 1.0 / (1.0 + std::exp(-2.0 * std::abs(z) / t));
      }
      bucket[r][j] = h;
      p[r][j] = pv;
      for (int64_t c = 0; c < d_out; ++c) ya[r][c] += pv * ta[j][h][c];
    }
  }
  if (bucket_out) *bucket_out = bucket;
  if (p_out) *p_out = p;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = d_out;
  return y.view(shape);
}

// |a - b| <= atol + rtol |b| everywhere; prints the first mismatches.
bool close_report(const torch::Tensor& actual, const torch::Tensor& expected, double atol, double rtol,
                  const std::string& what) {
  auto a = actual.detach().to(torch::kCPU, torch::kFloat64).contiguous().view({-1});
  auto e = expected.detach().to(torch::kCPU, torch::kFloat64).contiguous().view({-1});
  if (a.numel() != e.numel()) {
    MESSAGE(what << ": " << a.numel() << " elements, expected " << e.numel());
    return false;
  }
  auto bad = ((a - e).abs() > atol + rtol * e.abs()).logical_or(a.isnan() != e.isnan());
  const int64_t nbad = bad.sum().item<int64_t>();
  if (nbad == 0) return true;
  std::ostringstream os;
  os << what << ": " << nbad << " of " << a.numel() << " elements differ (atol " << atol << ", rtol " << rtol
     << "); first:";
  auto idx = bad.nonzero().view({-1});
  for (int64_t i = 0; i < std::min<int64_t>(5, idx.numel()); ++i) {
    const int64_t at = idx[i].item<int64_t>();
    os << " [" << at << "] " << a[at].item<double>() << " vs " << e[at].item<double>();
  }
  MESSAGE(os.str());
  return false;
}

bool cuda_usable(std::string* why) {
  if (!kernels::built_with_cuda()) {
    *why = "the kernels were built without CUDA (LibTorch has no CUDA or nvcc is missing)";
    return false;
  }
  if (!torch::cuda::is_available()) {
    *why = "no CUDA device is visible";
    return false;
  }
  return true;
}

// x whose chunks land in Zipf-distributed buckets (rank^-s), magnitudes |N(0,1)| + 0.05.
torch::Tensor zipf_input(int64_t n, int64_t k, int64_t tau, double s, uint64_t seed) {
  auto g = test::cpu_generator(seed);
  const int64_t r = int64_t{1} << tau;
  auto w = torch::arange(1, r + 1, torch::kFloat64).pow(-s);
  auto ranks = torch::multinomial((w / w.sum()).unsqueeze(0).expand({k, r}).contiguous(), n, true, g);
  auto codes = ranks.t().contiguous();  // rank b -> bucket b (bucket 0 is the hottest)
  auto bit = codes.unsqueeze(-1).bitwise_right_shift(torch::arange(tau, torch::kInt64)).bitwise_and(1);
  auto mag = torch::randn({n, k, tau}, g).abs() + 0.05;
  return ((bit.to(torch::kFloat32) * 2 - 1) * mag).view({n, k * tau});
}


}  // namespace

TEST_CASE("hashed: the identity behind p(z) (Eq. 12) holds for tau <= 10") {
  auto g = test::cpu_generator(7);
  for (int64_t tau = 1; tau <= 10; ++tau) {
    const double t = 0.5 + static_cast<double>(tau) / 7.0;
    auto z = torch::randn({tau}, g, torch::kFloat64);
    auto za = z.accessor<double, 1>();
    // Sum over all 2^tau codes c in {-1, +1}^tau of exp(<z, c> / t).
    double sum = 0, star = 0;
    for (int64_t code = 0; code < (int64_t{1} << tau); ++code) {
      double dot = 0;
      bool is_star = true;
      for (int64_t i = 0; i < tau; ++i) {
        const double c = (code >> i) & 1 ? 1.0 : -1.0;
        dot += za[i] * c;
        is_star = is_star && (c > 0) == (za[i] >= 0);
      }
      sum += std::exp(dot / t);
      if (is_star) star = std::exp(dot / t);
    }
    double prod = 1, p_prod = 1;
    for (int64_t i = 0; i < tau; ++i) {
      prod *= std::exp(za[i] / t) + std::exp(-za[i] / t);
      p_prod *= 1.0 / (1.0 + std::exp(-2.0 * std::abs(za[i]) / t));
    }
    CAPTURE(tau);
    CHECK(sum == doctest::Approx(prod).epsilon(1e-12));
    const double p_softmax = star / sum;
    CHECK(p_softmax == doctest::Approx(p_prod).epsilon(1e-12));
    // And the layer computes the same p (float64 and float32 paths).
    auto tables = torch::zeros({1, int64_t{1} << tau, 1}, torch::kFloat64);
    auto out = memory_layer(z.view({1, tau}), tables, {tau, t, false});
    CHECK(out.p[0][0].item<double>() == doctest::Approx(p_softmax).epsilon(1e-12));
    auto out32 = memory_layer(z.view({1, tau}).to(torch::kFloat32), tables.to(torch::kFloat32), {tau, t, false});
    CHECK(out32.p[0][0].item<double>() == doctest::Approx(p_softmax).epsilon(1e-6));
  }
}

TEST_CASE("hashed: bucket bit order is h(z) = sum [z_i >= 0] 2^i, zero and -0 count as positive") {
  // tau = 3, K = 3. Chunk 0: (+1, -1, 0) -> 1 + 4 = 5; chunk 1: (-2, +0.5, -3) -> 2;
  // chunk 2: (-0.0, -1e-30, 7) -> 1 + 4 = 5.
  auto x = torch::tensor({1.f, -1.f, 0.f, -2.f, 0.5f, -3.f, -0.0f, -1e-30f, 7.f}).view({1, 9});
  auto tables = torch::arange(3 * 8 * 2, torch::kFloat32).view({3, 8, 2});
  auto out = memory_layer(x, tables, {3, 1.0, false});
  REQUIRE((out.bucket.scalar_type() == torch::kInt32));
  REQUIRE(out.bucket.sizes() == torch::IntArrayRef({1, 3}));
  CHECK(out.bucket[0][0].item<int>() == 5);
  CHECK(out.bucket[0][1].item<int>() == 2);
  CHECK(out.bucket[0][2].item<int>() == 5);
  // y = sum_k p_k T_k[h_k] by hand.
  torch::Tensor nb, np;
  auto ref = naive_forward(x, tables, 3, 1.0, &nb, &np);
  CHECK(torch::equal(nb, out.bucket));
  CHECK(close_report(out.y, ref, 1e-5, 1e-6, "y"));
  // p of chunk 0 by hand: sigmoid(2)^2 * sigmoid(0).
  const double s2 = 1.0 / (1.0 + std::exp(-2.0));
  CHECK(out.p[0][0].item<double>() == doctest::Approx(s2 * s2 * 0.5).epsilon(1e-6));
}

TEST_CASE("hashed: NaN in x reaches p and y (never hidden), large |z| gives factors of 1") {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto x = torch::tensor({1.0, std::nan(""), 0.5, 1e30, -1e30, 200.0}, dtype).view({1, 6});
    auto tables = torch::ones({2, 8, 3}, dtype);
    auto out = memory_layer(x, tables, {3, 1.0, false});
    CHECK(std::isnan(out.p[0][0].item<double>()));
    CHECK(std::isnan(out.y[0][0].item<double>()));
    CHECK(out.p[0][1].item<double>() == doctest::Approx(1.0));  // every factor 1 / (1 + e^-huge)
    CHECK(out.bucket[0][1].item<int>() == 1 + 4);
  }
}

TEST_CASE("hashed: forward equals a naive loop (float32 and float64, ragged sizes, leading dims)") {
  struct Case {
    int64_t lead0, lead1, tau, k, d_out;
    double t;
  };
  // Covers: ragged column blocks, k not a multiple of 4, several row tiles (> 2048 rows),
  // packed and unpacked table slabs (tau 11 is too big to pack), tiny and 1-wide outputs.
  std::vector<Case> cases = {{2, 5, 3, 4, 37, 1.0},      {1, 300, 8, 3, 64 + 5, 0.7}, {3, 7, 1, 6, 1, 2.0},
                             {1, 130, 4, 16, 128, 1.0},  {2, 2, 10, 2, 33, 0.3},      {1, 4500, 11, 5, 130, 1.0},
                             {3, 900, 6, 7, 64, 1.5}};
  for (const auto& c : cases) {
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
      CAPTURE(c.tau);
      CAPTURE(c.k);
      CAPTURE(c.d_out);
      INFO("dtype " << c10::toString(dtype));
      auto g = test::cpu_generator(static_cast<uint64_t>(c.tau * 100 + c.k));
      auto x = torch::randn({c.lead0, c.lead1, c.k * c.tau}, g).to(dtype);
      auto tables = torch::randn({c.k, int64_t{1} << c.tau, c.d_out}, g).to(dtype);
      torch::Tensor nb, np;
      auto ref = naive_forward(x, tables, c.tau, c.t, &nb, &np);
      auto out = memory_layer(x, tables, {c.tau, c.t, false});
      CHECK(out.y.sizes() == torch::IntArrayRef({c.lead0, c.lead1, c.d_out}));
      CHECK((out.y.scalar_type() == dtype));
      CHECK(torch::equal(out.bucket, nb));
      const double tol = dtype == torch::kFloat32 ? 1e-5 : 1e-12;
      CHECK(close_report(out.p, np, tol * 1e-2, tol, "p"));
      CHECK(close_report(out.y, ref, tol, tol, "y"));
    }
  }
}

TEST_CASE("hashed: gradients (tables and input) match central finite differences in float64") {
  const int64_t n = 5, tau = 3, k = 2, d_out = 4;
  const double t = 0.8;
  auto g = test::cpu_generator(11);
  auto x0 = torch::randn({n, k * tau}, g, torch::kFloat64);
  x0 = torch::where(x0.abs() < 0.05, torch::full_like(x0, 0.3), x0);  // +-h never flips a sign (bucket)
  auto t0 = torch::randn({k, int64_t{1} << tau, d_out}, g, torch::kFloat64);
  auto w = torch::randn({n, d_out}, g, torch::kFloat64);  // loss = sum(w * y)
  auto loss_of = [&](const torch::Tensor& x, const torch::Tensor& tb) {
    return (memory_layer(x, tb, {tau, t, false}).y * w).sum().item<double>();
  };
  auto x = x0.clone().requires_grad_(true);
  auto tb = t0.clone().requires_grad_(true);
  (memory_layer(x, tb, {tau, t, false}).y * w).sum().backward();
  REQUIRE(x.grad().defined());
  REQUIRE(tb.grad().defined());
  const double h = 1e-6;
  auto fd_x = torch::zeros_like(x0);
  for (int64_t i = 0; i < x0.numel(); ++i) {
    auto xp = x0.clone(), xm = x0.clone();
    xp.view({-1})[i] += h;
    xm.view({-1})[i] -= h;
    fd_x.view({-1})[i] = (loss_of(xp, t0) - loss_of(xm, t0)) / (2 * h);
  }
  auto fd_t = torch::zeros_like(t0);
  for (int64_t i = 0; i < t0.numel(); ++i) {
    auto tp = t0.clone(), tm = t0.clone();
    tp.view({-1})[i] += h;
    tm.view({-1})[i] -= h;
    fd_t.view({-1})[i] = (loss_of(x0, tp) - loss_of(x0, tm)) / (2 * h);
  }
  CHECK(close_report(x.grad(), fd_x, 1e-8, 1e-6, "dL/dx"));
  CHECK(close_report(tb.grad(), fd_t, 1e-8, 1e-6, "dL/dT"));
  // Eq. 14 directly: dT_k[h] = sum over rows hitting h of p * dy.
  torch::Tensor nb, np;
  naive_forward(x0, t0, tau, t, &nb, &np);
  auto dt_ref = torch::zeros_like(t0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < k; ++j) dt_ref[j][nb[r][j].item<int64_t>()] += np[r][j] * w[r];
  CHECK(close_report(tb.grad(), dt_ref, 1e-12, 1e-12, "dT (Eq. 14)"));
}

TEST_CASE("hashed: backward equals Eq. 14 written with torch ops, on sizes with several row tiles") {
  struct Case {
    int64_t n, tau, k, d_out;
  };
  for (const auto& c : std::vector<Case>{{4500, 6, 9, 130}, {2100, 11, 2, 64}, {50, 3, 5, 7}}) {
    CAPTURE(c.n);
    CAPTURE(c.tau);
    const double t = 0.9;
    auto g = test::cpu_generator(static_cast<uint64_t>(c.n));
    auto x = torch::randn({c.n, c.k * c.tau}, g);
    auto tables = torch::randn({c.k, int64_t{1} << c.tau, c.d_out}, g);
    auto dy = torch::randn({c.n, c.d_out}, g);
    auto xl = x.clone().requires_grad_(true), tl = tables.clone().requires_grad_(true);
    auto out = memory_layer(xl, tl, {c.tau, t, false});
    out.y.backward(dy);
    // Reference in float64 from the (exact) buckets and p of the forward.
    auto h = out.bucket.to(torch::kInt64);
    auto pd = out.p.to(torch::kFloat64);
    auto dyd = dy.to(torch::kFloat64), td = tables.to(torch::kFloat64), xd = x.to(torch::kFloat64);
    auto dt_ref = torch::zeros_like(td);
    std::vector<torch::Tensor> gdots;
    for (int64_t j = 0; j < c.k; ++j) {
      dt_ref[j].index_add_(0, h.select(1, j), pd.select(1, j).unsqueeze(1) * dyd);
      gdots.push_back((dyd * td[j].index_select(0, h.select(1, j))).sum(1));  // dy . T_j[h]
    }
    auto gdot = torch::stack(gdots, 1);                                          // [n, k]
    auto z = xd.view({c.n, c.k, c.tau});
    auto e = torch::exp(-2.0 * z.abs() / t);
    auto sgn = torch::where(z >= 0, torch::ones_like(z), -torch::ones_like(z));
    auto dx_ref = ((gdot * pd * (2.0 / t)).unsqueeze(-1) * e / (1 + e) * sgn).view({c.n, c.k * c.tau});
    CHECK(close_report(tl.grad(), dt_ref, 1e-4, 1e-4, "dT"));
    CHECK(close_report(xl.grad(), dx_ref, 1e-4, 1e-4, "dx"));
  }
}

TEST_CASE("hashed: float32 gradients agree with float64, and with leading dimensions") {
  const int64_t tau = 4, k = 8, d_out = 40;
  auto g = test::cpu_generator(5);
  auto x64 = torch::randn({3, 50, k * tau}, g, torch::kFloat64);
  auto t64 = torch::randn({k, int64_t{1} << tau, d_out}, g, torch::kFloat64) * 0.3;
  auto dy = torch::randn({3, 50, d_out}, g, torch::kFloat64);
  auto run = [&](torch::ScalarType dt) {
    auto x = x64.to(dt).requires_grad_(true);
    auto tb = t64.to(dt).requires_grad_(true);
    memory_layer(x, tb, {tau, 1.0, false}).y.backward(dy.to(dt));
    return std::make_pair(x.grad(), tb.grad());
  };
  auto [gx32, gt32] = run(torch::kFloat32);
  auto [gx64, gt64] = run(torch::kFloat64);
  CHECK(close_report(gx32, gx64, 1e-5, 1e-4, "dx f32 vs f64"));
  CHECK(close_report(gt32, gt64, 1e-5, 1e-4, "dT f32 vs f64"));
}

TEST_CASE("hashed: CPU table gradient is bit-identical for any split of the work") {
  const int64_t n = 777, tau = 5, k = 12, d_out = 300;
  auto x = zipf_input(n, k, tau, 1.3, 3);
  auto tables = torch::randn({k, int64_t{1} << tau, d_out}, test::cpu_generator(4));
  auto out = memory_layer(x, tables, {tau, 1.0, false});
  auto dy = torch::randn({n, d_out}, test::cpu_generator(6));
  auto serial = torch::empty_like(tables), split = torch::empty_like(tables);
  kernels::hashed_lookup_backward_tables_cpu(out.bucket.data_ptr<int32_t>(), out.p.data_ptr<float>(),
                                             dy.data_ptr<float>(), serial.data_ptr<float>(), n, k,
                                             static_cast<int>(tau), d_out, {});
  // Tasks run one by one in reverse order, one per call.
  kernels::ParallelFor reversed = [](int64_t cnt, int64_t, const std::function<void(int64_t, int64_t)>& body) {
    for (int64_t i = cnt - 1; i >= 0; --i) body(i, i + 1);
  };
  kernels::hashed_lookup_backward_tables_cpu(out.bucket.data_ptr<int32_t>(), out.p.data_ptr<float>(),
                                             dy.data_ptr<float>(), split.data_ptr<float>(), n, k,
                                             static_cast<int>(tau), d_out, reversed);
  CHECK(torch::equal(serial, split));
  // And the autograd path gives the same bits.
  auto tl = tables.clone().requires_grad_(true);
  memory_layer(x, tl, {tau, 1.0, false}).y.backward(dy);
  CHECK(torch::equal(tl.grad(), serial));
}

TEST_CASE("hashed: CUDA forward and backward agree with the CPU reference, deterministic mode is bit-identical") {
  std::string why;
  if (!cuda_usable(&why)) {
    MNEMO_SKIP_WITHOUT_CUDA(why);
  }
  const torch::Device cuda(torch::kCUDA, 0);
  struct Case {
    int64_t n, tau, k, d_out;
    double zipf;  // 0 = uniform N(0,1) input
  };
  std::vector<Case> cases = {{1000, 8, 8, 64, 0}, {513, 3, 5, 37, 0}, {2048, 8, 4, 128, 1.2},
                             {300, 10, 2, 96, 0}, {4096, 4, 16, 512, 2.0}, {64, 1, 7, 5, 0}};
  for (const auto& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.tau);
    CAPTURE(c.k);
    CAPTURE(c.d_out);
    CAPTURE(c.zipf);
    auto x = c.zipf > 0 ? zipf_input(c.n, c.k, c.tau, c.zipf, 9) : torch::randn({c.n, c.k * c.tau}, test::cpu_generator(9));
    auto tables = torch::randn({c.k, int64_t{1} << c.tau, c.d_out}, test::cpu_generator(10)) * 0.5;
    auto dy = torch::randn({c.n, c.d_out}, test::cpu_generator(12));
    // CPU reference.
    auto xc = x.clone().requires_grad_(true), tc = tables.clone().requires_grad_(true);
    auto ref = memory_layer(xc, tc, {c.tau, 1.0, false});
    ref.y.backward(dy);
    for (auto tdtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
      INFO("tables " << c10::toString(tdtype));
      const bool f32 = tdtype == torch::kFloat32;
      // Reference with the tables rounded the same way, computed in fp32 on the CPU.
      auto t_round = tables.to(tdtype).to(torch::kFloat32);
      auto xr = x.clone().requires_grad_(true), tr = t_round.clone().requires_grad_(true);
      auto rr = memory_layer(xr, tr, {c.tau, 1.0, false});
      rr.y.backward(dy);
      for (bool det : {false, true}) {
        CAPTURE(det);
        auto xg = x.to(cuda).requires_grad_(true);
        auto tg = tables.to(tdtype).to(cuda).requires_grad_(true);
        auto out = memory_layer(xg, tg, {c.tau, 1.0, det});
        out.y.backward(dy.to(cuda));
        CHECK(torch::equal(out.bucket.cpu(), rr.bucket));
        CHECK(close_report(out.p, rr.p, 1e-6, 1e-5, "p"));
        CHECK(close_report(out.y, rr.y, 1e-4, 1e-4, "y"));
        CHECK(close_report(xg.grad(), xr.grad(), 1e-4, 1e-3, "dx"));
        const double gt_tol = f32 ? 1e-4 : 1e-2;  // the gradient is returned in the tables' dtype
        CHECK(close_report(tg.grad().to(torch::kFloat32), tr.grad(), gt_tol, gt_tol, "dT"));
        CHECK((tg.grad().scalar_type() == tdtype));
        if (det) {  // a second run gives the same bits
          auto tg2 = tables.to(tdtype).to(cuda).requires_grad_(true);
          memory_layer(x.to(cuda), tg2, {c.tau, 1.0, true}).y.backward(dy.to(cuda));
          CHECK(torch::equal(tg.grad().cpu(), tg2.grad().cpu()));
        }
      }
    }
  }
}

TEST_CASE("hashed: invalid settings are rejected with ConfigError naming the field") {
  auto message_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const ConfigError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("wrong exception type: ") + e.what();
    }
    return "no exception";
  };
  auto contains = [](const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; };
  std::string m = message_of([] { make_projection(10, 4, {"hashed", 3, 1.0}); });
  CHECK(contains(m, "'hash_bits' = 3"));
  CHECK(contains(m, "10"));
  CHECK(contains(message_of([] { make_projection(16, 4, {"hashed", 0, 1.0}); }), "'hash_bits' = 0 is out of range 1..16"));
  CHECK(contains(message_of([] { make_projection(34, 4, {"hashed", 17, 1.0}); }), "'hash_bits' = 17"));
  CHECK(contains(message_of([] { make_projection(16, 4, {"hashed", 4, 0.0}); }), "'hash_temperature'"));
  CHECK(contains(message_of([] { make_projection(16, 4, {"sparse", 4, 1.0}); }), "'linear' = 'sparse'"));
  // Memory Block: the second layer needs hash_bits + 2 <= 16.
  CHECK(contains(message_of([] { MemoryBlock(30, 15, 1.0); }), "'hash_bits' = 15"));
  // Through a model config: dim 16 is not a multiple of 5.
  auto cfg = test::tiny_memformer();
  cfg.linear = "hashed";
  cfg.hash_bits = 5;
  m = message_of([&] { make_model(cfg, 0); });
  CHECK(contains(m, "'hash_bits' = 5"));
  cfg.hash_bits = 17;
  CHECK(contains(message_of([&] { make_model(cfg, 0); }), "hash_bits"));
  CHECK(contains(message_of([] { ModelConfig::from_json({{"linear", "hashed"}, {"hash_bits", 0}}); }), "hash_bits"));
}

TEST_CASE("hashed: a model with linear = hashed has no dense projection or Linear but the output head") {
  auto cfg = test::tiny_memformer();  // dim 16
  cfg.linear = "hashed";
  cfg.hash_bits = 4;  // K = 4
  auto model = make_model(cfg, 3);
  int64_t hashed = 0, blocks = 0;
  std::vector<std::string> dense;
  for (const auto& item : model->named_modules("", false)) {
    const auto* m = item.value().get();
    if (dynamic_cast<const HashedProjectionImpl*>(m)) ++hashed;
    if (dynamic_cast<const MemoryBlockImpl*>(m)) ++blocks;
    if (dynamic_cast<const DenseProjectionImpl*>(m)) dense.push_back(item.key());
    if (dynamic_cast<const torch::nn::LinearImpl*>(m) && item.key() != "head") dense.push_back(item.key());
    if (const auto* ffn = dynamic_cast<const FeedForwardImpl*>(m)) {
      CHECK(ffn->fc1 == nullptr);
      CHECK(ffn->block);
    }
  }
  CHECK(dense.empty());
  for (const auto& d : dense) MESSAGE("dense projection left: " << d);
  // enc 2 x (4 self + 4 read + 2 ffn) + dec 1 x (4 + 4 + 2) + writer 3
  CHECK(hashed == 2 * 10 + 10 + 3);
  CHECK(blocks == 3);
  std::map<std::string, torch::Tensor> params;
  for (const auto& p : model->named_parameters(true)) params[p.key()] = p.value();
  REQUIRE(params.count("encoder.0.self_attn.q.tables"));
  CHECK(params["encoder.0.self_attn.q.tables"].sizes() == torch::IntArrayRef({4, 16, 16}));
  REQUIRE(params.count("encoder.0.ffn.block.fc1.tables"));
  CHECK(params["encoder.0.ffn.block.fc1.tables"].sizes() == torch::IntArrayRef({4, 16, 24}));  // (4+2)*4 = 24
  REQUIRE(params.count("encoder.0.ffn.block.fc2.tables"));
  CHECK(params["encoder.0.ffn.block.fc2.tables"].sizes() == torch::IntArrayRef({4, 64, 16}));  // 6-bit chunks
  CHECK(params.count("encoder.0.ffn.block.mid_norm.weight") == 1);
  CHECK(params.count("head.weight") == 1);

  // It trains: a step with a loss gives gradients to the tables.
  model->train();
  SegmentInput in;
  in.tokens = torch::randint(0, 256, {2, 8}, test::cpu_generator(1));
  in.valid = torch::ones({2, 8}, torch::kBool);
  in.next_tokens = torch::randint(0, 256, {2, 8}, test::cpu_generator(2));
  in.next_valid = torch::ones({2, 8}, torch::kBool);
  auto out = model->step(in, model->initial_memory(2), nullptr);
  REQUIRE(out.loss.defined());
  CHECK(std::isfinite(out.loss.item<double>()));
  out.loss.backward();
  auto gq = params["encoder.0.self_attn.q.tables"].grad();
  REQUIRE(gq.defined());
  CHECK(gq.abs().sum().item<double>() > 0);
  REQUIRE(params["encoder.0.ffn.block.fc2.tables"].grad().defined());
}

TEST_CASE("hashed: traces hold bucket [N, K] int32, p [N, K] and counts, repeated calls append") {
  auto cfg = test::tiny_memformer(4, 8);
  cfg.linear = "hashed";
  cfg.hash_bits = 4;
  auto model = make_model(cfg, 3);
  Document doc = make_document(std::string(40, 'a') + "bcdefghij");
  Engine engine(model, doc, cfg.segment_len, TraceSpec::of({"hash.*"}));
  auto snap = engine.jump(1);
  REQUIRE(snap);
  const auto& tr = snap->trace;
  const std::string q = "encoder.0.self_attn.q";
  REQUIRE(tr.has(keys::hash_bucket_key(q)));
  REQUIRE(tr.has(keys::hash_p_key(q)));
  REQUIRE(tr.has(keys::hash_counts_key(q)));
  const int64_t rows = 1 * (8 + cfg.n_cls);  // B x (L + cls)
  CHECK(tr.at(keys::hash_bucket_key(q)).sizes() == torch::IntArrayRef({rows, 4}));
  CHECK((tr.at(keys::hash_bucket_key(q)).scalar_type() == torch::kInt32));
  CHECK((tr.at(keys::hash_p_key(q)).scalar_type() == torch::kFloat32));
  CHECK(tr.at(keys::hash_counts_key(q)).sizes() == torch::IntArrayRef({4, 16}));
  CHECK(tr.at(keys::hash_counts_key(q)).sum().item<int64_t>() == rows * 4);
  // The writer's k runs on the memory slots and on the encoder output: rows are appended.
  CHECK(tr.at(keys::hash_bucket_key("writer.k")).size(0) == 4 + rows);
  CHECK(tr.at(keys::hash_counts_key("writer.k")).sum().item<int64_t>() == (4 + rows) * 4);
  // Second-layer FFN tables have 2^(4+2) buckets.
  CHECK(tr.at(keys::hash_counts_key("encoder.0.ffn.block.fc2")).size(1) == 64);
  auto paths = hash_paths(tr);
  CHECK(paths.size() == 33);
  // Tracing leaves the projections detached afterwards, and an untraced step adds nothing.
  for (const auto& item : model->named_modules("", false))
    if (auto* h = dynamic_cast<HashedProjectionImpl*>(item.value().get())) CHECK(h->tracer() == nullptr);
  Engine quiet(model, doc, cfg.segment_len, TraceSpec::of({"memformer.writer_attn"}));
  auto s2 = quiet.jump(0);
  CHECK(s2->trace.keys_with_prefix("hash.").empty());
}

TEST_CASE("hash stats: entropy, dead buckets and max/mean load, the accumulator adds counts") {
  // Table 0 uniform over 4 buckets, table 1 all in one bucket, table 2 never looked up.
  auto bucket = torch::tensor({0, 1, 2, 3, 1, 1, 1, 1}, torch::kInt32).view({2, 4}).t().contiguous();  // [4, 2]
  auto counts = torch::cat({bucket_counts(bucket, 4), torch::zeros({1, 4}, torch::kInt64)}, 0);
  CHECK(counts.sizes() == torch::IntArrayRef({3, 4}));
  CHECK(counts[1][1].item<int64_t>() == 4);
  auto st = hash_stats(counts);
  REQUIRE(st.tables.size() == 3);
  CHECK(st.buckets == 4);
  CHECK(st.tables[0].entropy == doctest::Approx(1.0));
  CHECK(st.tables[0].dead_fraction == doctest::Approx(0.0));
  CHECK(st.tables[0].max_load == doctest::Approx(1.0));
  CHECK(st.tables[1].entropy == doctest::Approx(0.0));
  CHECK(st.tables[1].dead_fraction == doctest::Approx(0.75));
  CHECK(st.tables[1].max_load == doctest::Approx(4.0));
  CHECK(st.tables[2].lookups == 0);
  CHECK(st.tables[2].dead_fraction == doctest::Approx(1.0));
  CHECK(st.mean().lookups == 8);
  // Two buckets at 3:1 -> H = -(0.75 ln 0.75 + 0.25 ln 0.25) / ln 4.
  auto two = hash_stats(torch::tensor({3, 1, 0, 0}, torch::kInt64).view({1, 4}));
  CHECK(two.tables[0].entropy == doctest::Approx(-(0.75 * std::log(0.75) + 0.25 * std::log(0.25)) / std::log(4.0)));
  CHECK_THROWS_AS(bucket_counts(torch::tensor({4}, torch::kInt32).view({1, 1}), 4), std::invalid_argument);

  HashStatsAccumulator acc;
  Trace tr;
  tr.tensors[keys::hash_counts_key("a.q")] = counts;
  tr.tensors[keys::hash_bucket_key("a.q")] = bucket;
  CHECK(acc.add(tr) == 1);
  CHECK(acc.add(tr) == 1);
  CHECK(acc.steps() == 2);
  CHECK(acc.paths() == std::vector<std::string>{"a.q"});
  CHECK(acc.counts("a.q")[1][1].item<int64_t>() == 8);
  CHECK(acc.stats("a.q").tables[1].max_load == doctest::Approx(4.0));
  CHECK_THROWS_AS(acc.add("a.q", torch::zeros({2, 4}, torch::kInt64)), std::invalid_argument);
  CHECK_THROWS_AS(acc.counts("nope"), std::out_of_range);
}

TEST_CASE("cli: step with a hashed model config writes the hash figures and document stats") {
  const std::string dir = test::temp_dir("cli-hash");
  const std::string cfg_path = dir + "/hashed.json";
  std::ofstream(cfg_path) << R"({"model": {"model": "memformer", "slots": 4, "segment_len": 16, "dim": 16, "heads": 2,
    "layers": 1, "dec_layers": 1, "linear": "hashed", "hash_bits": 4}})";
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  const auto r = test::run_cli("step --doc " + doc + " --out " + dir + "/out --config " + cfg_path +
                               " --from 0 --to 1 --format svg,csv");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(test::file_exists(dir + "/out/step-0000/hash/stats.csv"));
  CHECK(test::file_exists(dir + "/out/step-0001/hash/entropy.svg"));
  CHECK(test::file_exists(dir + "/out/step-0001/hash/encoder.0.self_attn.q.loads.csv"));
  // Detail figures: the first projection (sorted) per bucket count: 2^4 and 2^(4+2).
  CHECK(test::file_exists(dir + "/out/step-0001/hash/decoder.0.cross_attn.k.loads.svg"));
  CHECK(test::file_exists(dir + "/out/step-0001/hash/decoder.0.ffn.block.fc2.table0.svg"));
  CHECK(test::file_exists(dir + "/out/step-0001/hash/decoder.0.ffn.block.fc2.p.svg"));
  CHECK(test::file_exists(dir + "/out/hash_stats.csv"));
}
