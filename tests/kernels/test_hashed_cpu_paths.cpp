// The CPU code paths of the hashed lookup (kernels/hashed_lookup_cpu.h): run-time dispatch
// and its overrides, AVX2 against AVX-512 bit for bit, the vectorised paths against the
// portable one and against float64 references, bf16/fp16 tables, the table gradient over
// several dy tiles, thread-split determinism, and the reuse of table-gradient buffers.
// torch / core headers come before doctest (Debian LibTorch's glog defines CHECK).
#include "core/nn/hashed_linear.h"
#include "kernels/hashed_lookup_cpu.h"
#include "tests/support/skip.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace mnemo;
using kernels::CpuIsa;
using kernels::TableType;

namespace {

torch::Generator cpu_paths_generator(uint64_t seed) { return torch::make_generator<at::CPUGeneratorImpl>(seed); }


// Restores the kernel path chosen before the test case.
struct IsaGuard {
  CpuIsa saved = kernels::cpu_isa();
  ~IsaGuard() { kernels::set_cpu_isa(saved); }
};

// max |a - b| / max |b| (norm-wise relative difference), NaNs must match.
double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  auto ad = a.to(torch::kFloat64), bd = b.to(torch::kFloat64);
  REQUIRE(torch::equal(ad.isnan(), bd.isnan()));
  auto ok = ~bd.isnan();
  const double den = std::max(bd.masked_select(ok).abs().max().item<double>(), 1e-30);
  return (ad - bd).masked_select(ok).abs().max().item<double>() / den;
}

struct Sizes {
  int64_t n, k;
  int tau;
  int64_t d_out;
};

// Everything the kernels produce for one input, computed on the current path.
struct Outputs {
  torch::Tensor y, bucket, p, d_tables, dx;
};

Outputs run_kernels(const torch::Tensor& x, const torch::Tensor& tables, const torch::Tensor& dy, const Sizes& s,
                    double t, const kernels::ParallelFor& pf = {}) {
  Outputs o;
  o.y = torch::empty({s.n, s.d_out});
  o.bucket = torch::empty({s.n, s.k}, torch::kInt32);
  o.p = torch::empty({s.n, s.k});
  o.d_tables = torch::full({s.k, int64_t{1} << s.tau, s.d_out}, 123.0f);  // must be overwritten
  o.dx = torch::empty({s.n, s.k * s.tau});
  const TableType tt = tables.scalar_type() == torch::kBFloat16 ? TableType::kBFloat16
                       : tables.scalar_type() == torch::kFloat16 ? TableType::kFloat16
                                                                  : TableType::kFloat32;
  kernels::hashed_lookup_forward_cpu(x.data_ptr<float>(), tables.data_ptr(), tt, o.y.data_ptr<float>(),
                                     o.bucket.data_ptr<int32_t>(), o.p.data_ptr<float>(), s.n, s.k, s.tau, s.d_out, t, pf);
  kernels::hashed_lookup_backward_tables_cpu(o.bucket.data_ptr<int32_t>(), o.p.data_ptr<float>(), dy.data_ptr<float>(),
                                             o.d_tables.data_ptr<float>(), s.n, s.k, s.tau, s.d_out, pf);
  kernels::hashed_lookup_backward_input_cpu(x.data_ptr<float>(), tables.data_ptr(), tt, o.bucket.data_ptr<int32_t>(),
                                            o.p.data_ptr<float>(), dy.data_ptr<float>(), o.dx.data_ptr<float>(), s.n, s.k,
                                            s.tau, s.d_out, t, pf);
  return o;
}

// Inputs with a few special values: exact zeros of both signs, a NaN (row 0), huge |x|.
torch::Tensor make_x(const Sizes& s, uint64_t seed) {
  auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(seed));
  if (s.n > 2 && s.k * s.tau > 4) {
    x[1][0] = 0.0f;
    x[1][1] = -0.0f;
    x[2][2] = 1e30f;
    x[0][3] = std::nanf("");
  }
  return x;
}

// Sizes covering: full and ragged column blocks (d_out % 32), tables not a multiple of 16,
// rows not a multiple of the row block, packed slabs (tau <= 11) and slabs read in place
// (tau 12, 16), a single row, a single column; codes of 16 whole chunks (read by permutes on
// the AVX-512 path) for odd and even tau from 1 to 16, beside a last group of fewer chunks.
const std::vector<Sizes> kSizes = {{2048, 64, 8, 512}, {777, 12, 5, 300}, {50, 5, 3, 7},    {2100, 2, 11, 64},
                                   {40, 3, 12, 40},    {3, 3, 16, 33},    {1, 1, 1, 1},     {130, 16, 4, 128},
                                   {301, 17, 2, 95},   {200, 20, 7, 40},  {64, 16, 16, 32}, {100, 33, 3, 20},
                                   {50, 48, 1, 64}};

const std::vector<CpuIsa> kVector = {CpuIsa::kAvx2, CpuIsa::kAvx512};

}  // namespace

TEST_CASE("hashed cpu: dispatch picks the widest supported path - set_cpu_isa forces one - bad names are rejected") {
  IsaGuard guard;
  CHECK(kernels::cpu_isa_supported(CpuIsa::kPortable));
  const CpuIsa best = kernels::cpu_isa_best();
  CHECK(kernels::cpu_isa_supported(best));
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    INFO("path " << std::string(kernels::cpu_isa_name(isa)));
    CHECK(kernels::parse_cpu_isa(kernels::cpu_isa_name(isa)) == isa);
    if (kernels::cpu_isa_supported(isa)) {
      kernels::set_cpu_isa(isa);
      CHECK(kernels::cpu_isa() == isa);
      CHECK(static_cast<int>(isa) <= static_cast<int>(best));
    } else {
      CHECK_THROWS_WITH_AS(kernels::set_cpu_isa(isa), doctest::Contains("cannot run here"), std::invalid_argument);
    }
  }
  CHECK_THROWS_WITH_AS(kernels::parse_cpu_isa("sse9"), doctest::Contains("use portable, avx2 or avx512"),
                       std::invalid_argument);

  // Forced portable: y is exactly the plain float loop (separate multiply and add, tables
  // in order) on the codes the kernel computed; a vectorised path (fused multiply-adds)
  // differs from it in the last bits of some elements, which shows the switch happened.
  const Sizes s{64, 8, 4, 48};
  auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(3));
  auto tables = torch::randn({s.k, 16, s.d_out}, cpu_paths_generator(4));
  auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(5));
  kernels::set_cpu_isa(CpuIsa::kPortable);
  const Outputs po = run_kernels(x, tables, dy, s, 1.0);
  auto ref = torch::zeros({s.n, s.d_out});
  {
    auto ya = ref.accessor<float, 2>();
    auto ta = tables.accessor<float, 3>();
    auto ba = po.bucket.accessor<int32_t, 2>();
    auto pa = po.p.accessor<float, 2>();
    for (int64_t r = 0; r < s.n; ++r)
      for (int64_t j = 0; j < s.k; ++j) {
        const float pv = pa[r][j];
        for (int64_t c = 0; c < s.d_out; ++c) {
          const float prod = pv * ta[j][ba[r][j]][c];
          ya[r][c] = ya[r][c] + prod;
        }
      }
  }
  CHECK(torch::equal(po.y, ref));
  if (best == CpuIsa::kPortable) MNEMO_SKIP("this CPU has no AVX2/FMA: no vectorised path to tell apart");
  kernels::set_cpu_isa(best);
  const Outputs vo = run_kernels(x, tables, dy, s, 1.0);
  CHECK(torch::equal(vo.bucket, po.bucket));
  CHECK_FALSE(torch::equal(vo.y, po.y));
  CHECK(rel_diff(vo.y, po.y) < 1e-6);
}

TEST_CASE("hashed cpu: the AVX2 and AVX-512 paths give bit-identical results (fp32, bf16 and fp16 tables)") {
  IsaGuard guard;
  for (CpuIsa isa : kVector)
    if (!kernels::cpu_isa_supported(isa))
      MNEMO_SKIP(std::string("this CPU cannot run the ") + kernels::cpu_isa_name(isa) + " path");
  for (const auto& s : kSizes) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(s.tau);
      CAPTURE(s.d_out);
      INFO("tables " << std::string(c10::toString(dtype)));
      auto x = make_x(s, static_cast<uint64_t>(s.n + s.d_out));
      auto tables = torch::randn({s.k, int64_t{1} << s.tau, s.d_out}, cpu_paths_generator(2)).to(dtype);
      auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(3));
      kernels::set_cpu_isa(CpuIsa::kAvx2);
      const Outputs a = run_kernels(x, tables, dy, s, 0.8);
      kernels::set_cpu_isa(CpuIsa::kAvx512);
      const Outputs b = run_kernels(x, tables, dy, s, 0.8);
      CHECK(torch::equal(a.bucket, b.bucket));
      // torch::equal treats NaN as unequal: compare the bits.
      CHECK(torch::equal(a.p.view(torch::kInt32), b.p.view(torch::kInt32)));
      CHECK(torch::equal(a.y.view(torch::kInt32), b.y.view(torch::kInt32)));
      CHECK(torch::equal(a.d_tables.view(torch::kInt32), b.d_tables.view(torch::kInt32)));
      CHECK(torch::equal(a.dx.view(torch::kInt32), b.dx.view(torch::kInt32)));
    }
  }
}

TEST_CASE("hashed cpu: vectorised paths match the portable path and float64 (same buckets, y within 1e-6)") {
  IsaGuard guard;
  std::vector<CpuIsa> paths;
  for (CpuIsa isa : kVector)
    if (kernels::cpu_isa_supported(isa)) paths.push_back(isa);
  if (paths.empty()) MNEMO_SKIP("this CPU has no AVX2/FMA: only the portable path runs here");
  for (const auto& s : kSizes) {
    CAPTURE(s.n);
    CAPTURE(s.k);
    CAPTURE(s.tau);
    CAPTURE(s.d_out);
    auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(static_cast<uint64_t>(s.k + s.tau)));
    auto tables = torch::randn({s.k, int64_t{1} << s.tau, s.d_out}, cpu_paths_generator(7));
    auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(8));
    kernels::set_cpu_isa(CpuIsa::kPortable);
    const Outputs po = run_kernels(x, tables, dy, s, 0.7);
    // float64 references from the same codes.
    auto h = po.bucket.to(torch::kInt64);
    auto pd = po.p.to(torch::kFloat64), td = tables.to(torch::kFloat64), dyd = dy.to(torch::kFloat64);
    auto y64 = torch::zeros({s.n, s.d_out}, torch::kFloat64);
    auto dt64 = torch::zeros_like(td);
    for (int64_t j = 0; j < s.k; ++j) {
      auto hj = h.select(1, j);
      y64 += pd.select(1, j).unsqueeze(1) * td[j].index_select(0, hj);
      dt64[j].index_add_(0, hj, pd.select(1, j).unsqueeze(1) * dyd);
    }
    for (CpuIsa isa : paths) {
      INFO("path " << std::string(kernels::cpu_isa_name(isa)));
      kernels::set_cpu_isa(isa);
      const Outputs vo = run_kernels(x, tables, dy, s, 0.7);
      CHECK(torch::equal(vo.bucket, po.bucket));
      CHECK(rel_diff(vo.p, po.p) < 1e-6);
      CHECK(rel_diff(vo.y, po.y) < 1e-6);
      CHECK(rel_diff(vo.y, y64) < 1e-6);
      CHECK(rel_diff(vo.d_tables, dt64) < 1e-6);
      CHECK(rel_diff(vo.dx, po.dx) < 1e-5);  // dot products over d_out summed in another order
    }
  }
}

TEST_CASE("hashed cpu: bf16/fp16 tables compute the fp32 kernel on the widened tables - error against fp32 tables") {
  IsaGuard guard;
  const Sizes s{1000, 16, 8, 256};
  auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(21));
  auto t32 = torch::randn({s.k, 256, s.d_out}, cpu_paths_generator(22)) * 0.1;
  auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(23));
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    INFO("path " << std::string(kernels::cpu_isa_name(isa)));
    kernels::set_cpu_isa(isa);
    const Outputs full = run_kernels(x, t32, dy, s, 1.0);
    // Relative errors measured on this input (see docs/benchmarks.md): bf16 keeps 8
    // significant bits, fp16 11, so y is off by about 2^-9 and 2^-12 of its size.
    for (auto [dtype, tol] : {std::pair{torch::kBFloat16, 1e-2}, std::pair{torch::kFloat16, 2e-3}}) {
      INFO("tables " << std::string(c10::toString(dtype)));
      auto t16 = t32.to(dtype);
      const Outputs half = run_kernels(x, t16, dy, s, 1.0);
      const Outputs widened = run_kernels(x, t16.to(torch::kFloat32), dy, s, 1.0);
      CHECK(torch::equal(half.bucket, full.bucket));
      CHECK(torch::equal(half.y, widened.y));
      CHECK(torch::equal(half.dx, widened.dx));
      CHECK(torch::equal(half.d_tables, full.d_tables));  // does not read the tables
      const double ey = rel_diff(half.y, full.y), edx = rel_diff(half.dx, full.dx);
      MESSAGE(std::string(c10::toString(dtype)) << " tables on " << std::string(kernels::cpu_isa_name(isa))
                                                << ": y rel. error " << ey << ", dx rel. error " << edx);
      CHECK(ey < tol);
      CHECK(edx < tol);
      CHECK(ey > 0);  // the rounding is visible: the 16-bit tables were really read
    }
  }
  // Through memory_layer: bf16 tables give float32 y, a bf16 table gradient (computed in
  // fp32, then rounded) and dx close to the fp32 layer's.
  kernels::set_cpu_isa(guard.saved);
  auto tb = t32.to(torch::kBFloat16).requires_grad_(true);
  auto xl = x.clone().requires_grad_(true);
  auto out = memory_layer(xl, tb, {8, 1.0, false});
  CHECK((out.y.scalar_type() == torch::kFloat32));
  out.y.backward(dy);
  REQUIRE(tb.grad().defined());
  CHECK((tb.grad().scalar_type() == torch::kBFloat16));
  auto t32l = t32.to(torch::kBFloat16).to(torch::kFloat32).requires_grad_(true);
  auto xl32 = x.clone().requires_grad_(true);
  memory_layer(xl32, t32l, {8, 1.0, false}).y.backward(dy);
  CHECK(torch::equal(xl.grad(), xl32.grad()));
  CHECK(torch::equal(tb.grad(), t32l.grad().to(torch::kBFloat16)));
  CHECK_THROWS_WITH_AS(memory_layer(x.to(torch::kFloat64), t32.to(torch::kBFloat16), {8, 1.0, false}),
                       doctest::Contains("CPU tables must have x's dtype"), c10::Error);
}

TEST_CASE("hashed cpu: the table gradient over several dy tiles (more than 65536 rows) is the ordered row sum") {
  IsaGuard guard;
  const Sizes s{70000, 2, 3, 40};
  auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(31));
  auto tables = torch::randn({s.k, 8, s.d_out}, cpu_paths_generator(32));
  auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(33));
  kernels::set_cpu_isa(CpuIsa::kPortable);
  const Outputs po = run_kernels(x, tables, dy, s, 1.0);
  auto dt64 = torch::zeros({s.k, 8, s.d_out}, torch::kFloat64);
  for (int64_t j = 0; j < s.k; ++j)
    dt64[j].index_add_(0, po.bucket.select(1, j).to(torch::kInt64),
                       po.p.select(1, j).to(torch::kFloat64).unsqueeze(1) * dy.to(torch::kFloat64));
  CHECK(rel_diff(po.d_tables, dt64) < 1e-5);
  for (CpuIsa isa : kVector) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    INFO("path " << std::string(kernels::cpu_isa_name(isa)));
    kernels::set_cpu_isa(isa);
    auto dt = torch::empty_like(po.d_tables);
    kernels::hashed_lookup_backward_tables_cpu(po.bucket.data_ptr<int32_t>(), po.p.data_ptr<float>(),
                                               dy.data_ptr<float>(), dt.data_ptr<float>(), s.n, s.k, s.tau, s.d_out, {});
    // ~4400 rows per bucket, each summed in row order with fused multiply-adds.
    CHECK(rel_diff(dt, dt64) < 1e-5);
    CHECK(rel_diff(dt, po.d_tables) < 1e-5);
  }
}

TEST_CASE("hashed cpu: every path gives the same bits for any split of the work") {
  IsaGuard guard;
  const Sizes s{1500, 20, 6, 200};
  auto x = torch::randn({s.n, s.k * s.tau}, cpu_paths_generator(41));
  auto tables = torch::randn({s.k, 64, s.d_out}, cpu_paths_generator(42));
  auto dy = torch::randn({s.n, s.d_out}, cpu_paths_generator(43));
  // Tasks of `grain` items run one by one, last first.
  const kernels::ParallelFor reversed = [](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    for (int64_t b = (n - 1) / grain * grain; b >= 0; b -= grain) body(b, std::min(n, b + grain));
  };
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    INFO("path " << std::string(kernels::cpu_isa_name(isa)));
    kernels::set_cpu_isa(isa);
    const Outputs a = run_kernels(x, tables, dy, s, 1.0);
    const Outputs b = run_kernels(x, tables, dy, s, 1.0, reversed);
    CHECK(torch::equal(a.bucket, b.bucket));
    CHECK(torch::equal(a.p, b.p));
    CHECK(torch::equal(a.y, b.y));
    CHECK(torch::equal(a.d_tables, b.d_tables));
    CHECK(torch::equal(a.dx, b.dx));
  }
}

TEST_CASE("hashed cpu: a reused table-gradient buffer never changes a gradient still held") {
  const int64_t n = 600, tau = 8, k = 8, d_out = 160;  // 1.25 MiB gradients: the reused size class
  auto tables = torch::randn({k, 256, d_out}, cpu_paths_generator(51));
  auto grad_of = [&](uint64_t seed) {
    auto x = torch::randn({n, k * tau}, cpu_paths_generator(seed));
    auto dy = torch::randn({n, d_out}, cpu_paths_generator(seed + 1));
    auto tl = tables.clone().requires_grad_(true);
    memory_layer(x, tl, {tau, 1.0, false}).y.backward(dy);
    return std::make_pair(tl.grad(), tl.grad().clone());
  };
  auto [g1, c1] = grad_of(1);
  {
    auto [g2, c2] = grad_of(3);  // g1 is alive: g2 must be other memory
    CHECK(g1.data_ptr() != g2.data_ptr());
    CHECK(torch::equal(g2, c2));
  }
  for (uint64_t seed = 5; seed < 11; seed += 2) {  // freed buffers come back; g1 stays intact
    auto [g, c] = grad_of(seed);
    CHECK(g.data_ptr() != g1.data_ptr());
    CHECK(torch::equal(g, c));
    CHECK_FALSE(torch::equal(g, c1));
  }
  CHECK(torch::equal(g1, c1));
}

TEST_CASE("bench hashed-linear: the CPU part names BLAS, kernel path, bandwidth and roofline - bad CPU flags exit 2") {
  const std::string tiny = "bench hashed-linear --device cpu --tokens 64 --dim 32 --bits 4 --repeats 1 --threads 1";
  auto r = test::run_cli(tiny + " --tables fp32,bf16 --cpu-kernels portable");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("hashed kernels: portable path") != std::string::npos);
  CHECK(r.output.find("BLAS loaded: ") != std::string::npos);
  CHECK(r.output.find("stream read ") != std::string::npos);
  CHECK(r.output.find("roofline, forward, fp32 tables, N = 64") != std::string::npos);
  CHECK(r.output.find("roofline, forward, bf16 tables, N = 64") != std::string::npos);
  CHECK(r.output.find("  1 bf16       64 fwd+bwd ") != std::string::npos);
  CHECK(r.output.find("goal CPU") == std::string::npos);  // goals are for d = 512, tau = 8 only
  if (kernels::cpu_isa_supported(CpuIsa::kAvx2)) {  // the environment variable picks the path too
    test::EnvGuard env("MNEMO_CPU_KERNELS", "avx2");
    auto e = test::run_cli(tiny + " --tables fp32");
    CAPTURE(e.output);
    CHECK(e.code == 0);
    CHECK(e.output.find("hashed kernels: avx2 path") != std::string::npos);
  }
  test::CliRun bad_env;
  {
    test::EnvGuard env("MNEMO_CPU_KERNELS", "sse9");
    bad_env = test::run_cli(tiny);
  }
  CHECK(bad_env.code == 2);
  CHECK(bad_env.output.find("MNEMO_CPU_KERNELS: CPU kernel path 'sse9' is unknown") != std::string::npos);
  CHECK(bad_env.output.find("mnemoscope: error:") != std::string::npos);
  CHECK(bad_env.output.find("bench hashed-linear:") == std::string::npos);  // nothing printed before the error
  for (auto [args, msg] : {std::pair<std::string, std::string>{" --tables fp64", "--tables fp64 is unknown"},
                           {" --cpu-kernels sse", "--cpu-kernels: CPU kernel path 'sse' is unknown"},
                           {" --threads 0", "--threads 0 is out of range"}}) {
    auto b = test::run_cli(tiny + args);
    CAPTURE(args);
    CAPTURE(b.output);
    CHECK(b.code == 2);
    CHECK(b.output.find(msg) != std::string::npos);
  }
}
