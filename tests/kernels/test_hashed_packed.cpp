// Tables kept in the CPU kernels' packed layout (kernels/hashed_lookup_cpu.h, "tables kept in
// the kernels' layout"; core/nn/hashed_linear.h, PackedTablesCache): the layout itself, the
// packed calls against the per-call packing bit for bit on every path, and the cache - the
// same bits as no cache, one pack for repeated calls, and a repack after every kind of
// in-place update of the tables (a stale copy would fail these tests).
// torch / core headers come before doctest (Debian LibTorch's glog defines CHECK).
#include "core/models/factory.h"
#include "core/nn/hashed_linear.h"
#include "core/train/optim.h"
#include "kernels/hashed_lookup_cpu.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

using namespace mnemo;
using kernels::CpuIsa;
using kernels::TableType;

namespace {

torch::Generator packed_generator(uint64_t seed) { return torch::make_generator<at::CPUGeneratorImpl>(seed); }

struct IsaGuard {
  CpuIsa saved = kernels::cpu_isa();
  ~IsaGuard() { kernels::set_cpu_isa(saved); }
};

TableType type_of(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16  ? TableType::kBFloat16
         : t.scalar_type() == torch::kFloat16 ? TableType::kFloat16
                                               : TableType::kFloat32;
}

struct Shape {
  int64_t n, k;
  int tau;
  int64_t d_out;
};

torch::Tensor pack(const torch::Tensor& tables, const Shape& s, const kernels::ParallelFor& pf = {}) {
  auto packed = torch::full({kernels::hashed_packed_elems(s.k, s.tau, s.d_out)}, 7.0, tables.options());
  kernels::hashed_pack_tables_cpu(tables.data_ptr(), type_of(tables), packed.data_ptr(), s.k, s.tau, s.d_out, pf);
  return packed;
}

// Forward and input gradient on the current path, tables as given or packed ahead of time.
struct Out {
  torch::Tensor y, bucket, p, dx;
};
Out run(const torch::Tensor& x, const torch::Tensor& tables, const torch::Tensor& packed, const torch::Tensor& dy,
        const Shape& s, double t) {
  Out o{torch::empty({s.n, s.d_out}), torch::empty({s.n, s.k}, torch::kInt32), torch::empty({s.n, s.k}),
        torch::empty({s.n, s.k * s.tau})};
  const TableType tt = type_of(packed.defined() ? packed : tables);  // the packed copy has the tables' dtype
  if (packed.defined())
    kernels::hashed_lookup_forward_packed_cpu(x.data_ptr<float>(), packed.data_ptr(), tt, o.y.data_ptr<float>(),
                                              o.bucket.data_ptr<int32_t>(), o.p.data_ptr<float>(), s.n, s.k, s.tau,
                                              s.d_out, t, {});
  else
    kernels::hashed_lookup_forward_cpu(x.data_ptr<float>(), tables.data_ptr(), tt, o.y.data_ptr<float>(),
                                       o.bucket.data_ptr<int32_t>(), o.p.data_ptr<float>(), s.n, s.k, s.tau, s.d_out, t,
                                       {});
  if (packed.defined())
    kernels::hashed_lookup_backward_input_packed_cpu(x.data_ptr<float>(), packed.data_ptr(), tt,
                                                     o.bucket.data_ptr<int32_t>(), o.p.data_ptr<float>(),
                                                     dy.data_ptr<float>(), o.dx.data_ptr<float>(), s.n, s.k, s.tau,
                                                     s.d_out, t, {});
  else
    kernels::hashed_lookup_backward_input_cpu(x.data_ptr<float>(), tables.data_ptr(), tt, o.bucket.data_ptr<int32_t>(),
                                              o.p.data_ptr<float>(), dy.data_ptr<float>(), o.dx.data_ptr<float>(), s.n,
                                              s.k, s.tau, s.d_out, t, {});
  return o;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), static_cast<size_t>(a.nbytes())) == 0;
}

// y, dx and the table gradient of memory_layer on `leaf` (tables that require grad), with or
// without a cache.
struct LayerOut {
  torch::Tensor y, dx, dtables;
};
LayerOut layer(const torch::Tensor& x, const torch::Tensor& leaf, const torch::Tensor& dy, int64_t bits,
               PackedTablesCache* cache) {
  auto xl = x.detach().requires_grad_(true);
  leaf.mutable_grad() = torch::Tensor();
  auto y = memory_layer(xl, leaf, {bits, 1.0, false, cache}).y;
  y.backward(dy);
  return {y.detach(), xl.grad(), leaf.grad()};
}
LayerOut uncached(const torch::Tensor& x, const torch::Tensor& tables, const torch::Tensor& dy, int64_t bits) {
  return layer(x, tables.detach().requires_grad_(true), dy, bits, nullptr);
}

}  // namespace

TEST_CASE("hashed packed: the layout is [block - table - row - 32 columns] with zeros past d_out and bf16 column pairs") {
  IsaGuard guard;
  const Shape s{1, 3, 2, 70};  // 3 blocks, the last 6 columns wide
  auto tables = torch::randn({s.k, 4, s.d_out}, packed_generator(1));
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512})
  for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    kernels::set_cpu_isa(isa);  // each path packs with its own code, into the same layout
    INFO("path " << std::string(kernels::cpu_isa_name(isa)) << ", tables " << std::string(c10::toString(dtype)));
    auto t = tables.to(dtype);
    auto packed = pack(t, s);
    REQUIRE(packed.numel() == 3 * s.k * 4 * 32);
    auto p16 = packed.view({3, s.k, 4, 32});
    int64_t wrong = 0;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < s.k; ++j)
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t l = 0; l < 32; ++l) {
            const int64_t c = b * 32 + l;
            const int64_t pos = dtype == torch::kBFloat16 ? (l < 16 ? 2 * l : 2 * (l - 16) + 1) : l;
            const float want = c < s.d_out ? t[j][h][c].item<float>() : 0.0f;
            wrong += p16[b][j][h][pos].item<float>() != want;
          }
    CHECK(wrong == 0);
  }
}

TEST_CASE("hashed packed: tables packed ahead of time give the bits of packing in every call on every path") {
  IsaGuard guard;
  // Packed slabs and slabs read in place (tau 12, 16; few rows per bucket), ragged column
  // blocks, tables not a multiple of 16, a single row, the bench's shape.
  const std::vector<Shape> shapes = {{2048, 64, 8, 512}, {777, 12, 5, 300}, {50, 5, 3, 7}, {2100, 2, 11, 64},
                                     {40, 3, 12, 40},    {3, 3, 16, 33},    {1, 1, 1, 1},  {301, 17, 2, 95}};
  // Tasks run one by one, last first: packing and calls do not depend on the split.
  const kernels::ParallelFor reversed = [](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    for (int64_t b = (n - 1) / grain * grain; b >= 0; b -= grain) body(b, std::min(n, b + grain));
  };
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    kernels::set_cpu_isa(isa);
    for (const auto& s : shapes)
      for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
        INFO("path " << std::string(kernels::cpu_isa_name(isa)) << ", tables " << std::string(c10::toString(dtype)));
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(s.tau);
        CAPTURE(s.d_out);
        auto x = torch::randn({s.n, s.k * s.tau}, packed_generator(static_cast<uint64_t>(s.n + s.tau)));
        if (s.n > 2 && s.k * s.tau > 3) {
          x[1][0] = 0.0f;
          x[1][1] = -0.0f;
          x[0][2] = std::nanf("");
        }
        auto tables = torch::randn({s.k, int64_t{1} << s.tau, s.d_out}, packed_generator(5)).to(dtype);
        auto dy = torch::randn({s.n, s.d_out}, packed_generator(6));
        auto packed = pack(tables, s);
        CHECK(same_bits(packed, pack(tables, s, reversed)));
        const Out a = run(x, tables, {}, dy, s, 0.8), b = run(x, {}, packed, dy, s, 0.8);
        CHECK(torch::equal(a.bucket, b.bucket));
        CHECK(same_bits(a.p, b.p));
        CHECK(same_bits(a.y, b.y));
        CHECK(same_bits(a.dx, b.dx));
        CHECK(a.y.nan_to_num().abs().sum().item<double>() > 0);  // something was computed (row 0 is NaN)
      }
  }
}

TEST_CASE("hashed packed: the forward timed by phases computes the same bits and fills codes - fetch - gathers") {
  IsaGuard guard;
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!kernels::cpu_isa_supported(isa)) continue;
    kernels::set_cpu_isa(isa);
    INFO("path " << std::string(kernels::cpu_isa_name(isa)));
    // {512, 64, 8, 512} fetches its slabs (16 tables a group); {40, 3, 12, 40} reads them in place.
    for (const Shape& s : {Shape{512, 64, 8, 512}, Shape{40, 3, 12, 40}}) {
      CAPTURE(s.tau);
      auto x = torch::randn({s.n, s.k * s.tau}, packed_generator(11));
      auto tables = torch::randn({s.k, int64_t{1} << s.tau, s.d_out}, packed_generator(12));
      auto packed = pack(tables, s);
      const Out plain = run(x, {}, packed, torch::zeros({s.n, s.d_out}), s, 0.9);
      auto y = torch::empty({s.n, s.d_out});
      auto bucket = torch::empty({s.n, s.k}, torch::kInt32);
      auto p = torch::empty({s.n, s.k});
      kernels::HashedForwardPhases ph;
      kernels::hashed_lookup_forward_packed_cpu(x.data_ptr<float>(), packed.data_ptr(), TableType::kFloat32,
                                                y.data_ptr<float>(), bucket.data_ptr<int32_t>(), p.data_ptr<float>(),
                                                s.n, s.k, s.tau, s.d_out, 0.9, ph);
      CHECK(same_bits(y, plain.y));
      CHECK(same_bits(p, plain.p));
      CHECK(torch::equal(bucket, plain.bucket));
      if (isa == CpuIsa::kPortable) {
        CHECK(ph.codes == 0);  // the portable path is not split into phases
        CHECK(ph.gathers == 0);
      } else {
        CHECK(ph.codes > 0);
        CHECK(ph.gathers > 0);
        if (s.tau == 8) CHECK(ph.fetch > 0);
        else CHECK(ph.fetch == 0);  // slabs read in place are not fetched ahead
      }
    }
  }
}

TEST_CASE("hashed packed: memory_layer with a cache gives the bits of no cache and packs once for unchanged tables") {
  const int64_t n = 300, k = 12, tau = 6, d_out = 80;
  auto x = torch::randn({n, k * tau}, packed_generator(11));
  auto dy = torch::randn({n, d_out}, packed_generator(12));
  for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
    INFO("tables " << std::string(c10::toString(dtype)));
    auto tables = (torch::randn({k, 64, d_out}, packed_generator(13)) * 0.2).to(dtype).requires_grad_(true);
    PackedTablesCache cache;
    const LayerOut ref = uncached(x, tables, dy, tau);
    CHECK(cache.packs() == 0);
    for (int call = 0; call < 3; ++call) {
      CAPTURE(call);
      const LayerOut got = layer(x, tables, dy, tau, &cache);
      CHECK(same_bits(got.y, ref.y));
      CHECK(same_bits(got.dx, ref.dx));
      CHECK(same_bits(got.dtables, ref.dtables));
      CHECK(cache.packs() == 1);  // forward and backward of every call used the first pack
    }
    {
      torch::NoGradGuard g;
      auto y = memory_layer(x, tables, {tau, 1.0, false, &cache}).y;
      CHECK(same_bits(y, ref.y));
    }
    CHECK(cache.packs() == 1);
    // Another tensor through the same cache - a copy, or even an alias of the same memory
    // (the cache keys on the tensor object, whose version counter it reads): packed anew.
    auto other = tables.detach().clone().requires_grad_(true);
    const LayerOut o = layer(x, other, dy, tau, &cache);
    CHECK(cache.packs() == 2);
    CHECK(same_bits(o.y, ref.y));  // equal values, so equal results
    layer(x, tables.detach().requires_grad_(true), dy, tau, &cache);
    CHECK(cache.packs() == 3);
    // Float64 and CUDA are never cached: no pack, the uncached results.
    auto y64 = memory_layer(x.to(torch::kFloat64), tables.to(torch::kFloat64), {tau, 1.0, false, &cache}).y;
    CHECK(cache.packs() == 3);
    CHECK((y64.scalar_type() == torch::kFloat64));
  }
}

TEST_CASE("hashed packed: the next call sees every in-place update of the tables - add_ - optimizer step - fused optimizer step - checkpoint load - InferenceMode") {
  torch::manual_seed(21);
  auto proj = std::make_shared<HashedProjectionImpl>(48, 40, 6, 1.0);  // K = 8 tables of 64 rows
  auto x = torch::randn({200, 48}, packed_generator(22));
  auto dy = torch::randn({200, 40}, packed_generator(23));
  // The module's y and gradients must be those of the uncached layer on the tables' current values.
  auto check_fresh = [&](const char* after, int64_t packs) {
    INFO("after " << after);
    const LayerOut want = uncached(x, proj->tables, dy, 6);
    auto xl = x.detach().requires_grad_(true);
    proj->tables.mutable_grad() = torch::Tensor();
    auto y = proj->forward(xl);
    y.backward(dy);
    CHECK(same_bits(y.detach(), want.y));
    CHECK(same_bits(xl.grad(), want.dx));
    CHECK(same_bits(proj->tables.grad(), want.dtables));
    CHECK(proj->packed_tables->packs() == packs);
    return y.detach();
  };
  auto y0 = check_fresh("the first call", 1);
  check_fresh("a second call on unchanged tables", 1);

  {
    torch::NoGradGuard g;
    proj->tables.add_(0.25);
  }
  auto y1 = check_fresh("tables.add_ under NoGradGuard", 2);
  CHECK_FALSE(same_bits(y1, y0));  // the update changed y: a stale copy would give y0

  torch::optim::AdamW opt(proj->parameters(), torch::optim::AdamWOptions(0.1));
  proj->tables.mutable_grad() = torch::Tensor();
  proj->forward(x).backward(dy);
  CHECK(proj->packed_tables->packs() == 2);
  opt.step();
  auto y2 = check_fresh("an AdamW step", 3);
  CHECK_FALSE(same_bits(y2, y1));
  // The trainer's fused step (core/train/optim.h) writes through raw pointers and bumps the
  // version counter itself.
  proj->tables.mutable_grad() = torch::Tensor();
  proj->forward(x).backward(dy);
  REQUIRE(adamw_step(opt));
  const torch::Tensor y2b = check_fresh("the fused AdamW step", 4);
  CHECK_FALSE(same_bits(y2b, y2));

  // A checkpoint load (load_weights, what load_checkpoint and the trainer's resume call).
  auto other = std::make_shared<HashedProjectionImpl>(48, 40, 6, 1.0);
  REQUIRE_FALSE(torch::equal(other->tables, proj->tables));
  load_weights(*proj, named_weights(*other), "test");
  auto y3 = check_fresh("load_weights", 5);
  CHECK_FALSE(same_bits(y3, y2));

  {
    c10::InferenceMode g;  // stepping and evaluating run under InferenceMode
    auto before = proj->forward(x);
    CHECK(same_bits(before, y3));
    CHECK(proj->packed_tables->packs() == 5);
    proj->tables.mul_(-1.0);
    auto after = proj->forward(x);
    CHECK(proj->packed_tables->packs() == 6);
    CHECK(same_bits(after, memory_layer(x, proj->tables, {6, 1.0, false, nullptr}).y));
    CHECK_FALSE(same_bits(after, y3));
  }
  check_fresh("packing under InferenceMode, then training", 6);  // the packed copy is a normal tensor

  // Writes that bypass the version counter are only seen after invalidate().
  {
    torch::NoGradGuard g;
    auto raw = torch::randn_like(proj->tables);
    std::memcpy(proj->tables.data_ptr(), raw.data_ptr(), static_cast<size_t>(raw.nbytes()));
  }
  proj->packed_tables->invalidate();
  check_fresh("a raw write and invalidate()", 7);

  // A replaced tables tensor (a new parameter object) is a different tensor.
  {
    torch::NoGradGuard g;
    proj->tables.set_data(torch::randn_like(proj->tables));
  }
  check_fresh("set_data", 8);
}

TEST_CASE("bench hashed-linear: table cache rows - roofline time and share - pack time - the goal lines - d_in = K tau") {
  // d = 30, tau = 4: K = 7 tables, d_in = 28 on the CPU.
  const std::string tiny = "bench hashed-linear --device cpu --tokens 64 --dim 30 --bits 4 --repeats 1 --threads 1";
  auto r = test::run_cli(tiny + " --tables fp32 --loads uniform");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("d_in = 28, d_out = 30") != std::string::npos);
  CHECK(r.output.find("cache hash_wall") != std::string::npos);
  CHECK(r.output.find("roofline ms") != std::string::npos);
  for (const char* row : {"  1 fp32       64 forward  uniform  on ", "  1 fp32       64 forward  uniform  off ",
                          "  1 fp32       64 fwd+bwd  uniform  on ", "  1 fp32       64 fwd+bwd  uniform  off "})
    CHECK(r.output.find(row) != std::string::npos);
  CHECK(r.output.find("zipf1.1") == std::string::npos);  // --loads uniform: no skewed rows
  CHECK(r.output.find("1 thread(s), fp32 tables: ") != std::string::npos);  // the pack time
  CHECK(r.output.find("torch AdamW step") != std::string::npos);
  auto off = test::run_cli(tiny + " --tables bf16 --passes forward --table-cache off");
  CAPTURE(off.output);
  REQUIRE(off.code == 0);
  CHECK(off.output.find("  1 bf16       64 forward  uniform  off ") != std::string::npos);
  CHECK(off.output.find(" on  ") == std::string::npos);
  CHECK(off.output.find("fwd+bwd  ") == std::string::npos);
  CHECK(off.output.find("packing the tables") == std::string::npos);  // no cache, no pack line
  // The goal lines, at the size they are set for.
  auto g = test::run_cli("bench hashed-linear --device cpu --tokens 64 --repeats 1 --threads 1 --tables fp32,bf16 "
                         "--loads uniform --table-cache on");
  CAPTURE(g.output);
  REQUIRE(g.code == 0);
  for (const char* goal : {"goal CPU forward >= 70% of the roofline (fp32 tables, 1 thread, cache on), N = 64, uniform: ",
                           "goal CPU forward >= 2.0x dense (fp32 tables, 1 thread, cache on), N = 64, uniform: ",
                           "goal CPU forward >= 3.0x dense (bf16 tables, 1 thread, cache on), N = 64, uniform: ",
                           "goal CPU fwd+bwd >= 1.5x dense (fp32 tables, 1 thread, cache on), N = 64, uniform: "})
    CHECK(g.output.find(goal) != std::string::npos);
  for (auto [args, msg] : {std::pair<std::string, std::string>{" --table-cache maybe", "--table-cache maybe is unknown"},
                           {" --passes backward", "--passes backward is unknown"},
                           {" --loads heavy", "--loads heavy is unknown"}}) {
    auto b = test::run_cli(tiny + args);
    CAPTURE(args);
    CAPTURE(b.output);
    CHECK(b.code == 2);
    CHECK(b.output.find(msg) != std::string::npos);
  }
}

TEST_CASE("bench hashed-linear --against-python: the layer in PyTorch ops computes the kernel's output, timed beside it") {
  // d = 30, tau = 4: K = 7 tables, d_in = 28; two token counts, both passes.
  const std::string tiny = "bench hashed-linear --device cpu --tokens 64,96 --dim 30 --bits 4 --repeats 1 --threads 1 "
                           "--tables fp32 --loads uniform --table-cache on --against-python";
  auto r = test::run_cli(tiny);
  CAPTURE(r.output);
  if (r.output.find("has no PyTorch") != std::string::npos) {
    MNEMO_SKIP("/usr/bin/python3 has no PyTorch (Debian's python3-torch)");
    return;
  }
  REQUIRE(r.code == 0);
  const auto at = r.output.find("against the same layer in PyTorch ops");
  REQUIRE(at != std::string::npos);
  // One row per token count and pass, each with the largest |y_python - y_kernel|.
  int rows = 0;
  std::istringstream in(r.output.substr(at));
  std::string line;
  while (std::getline(in, line)) {
    long long thr = 0, tokens = 0;
    char pass[16] = {0}, cache[8] = {0};
    double kernel = 0, py = 0, ratio = 0, td = 0, ld = 0, diff = -1;
    if (std::sscanf(line.c_str(), "%lld %lld %15s %7s %lf ms %lf ms %lfx %lf ms %lf ms %lf", &thr, &tokens, pass, cache,
                    &kernel, &py, &ratio, &td, &ld, &diff) != 10)
      continue;
    CAPTURE(line);
    ++rows;
    CHECK(thr == 1);
    CHECK((tokens == 64 || tokens == 96));
    CHECK(std::string(cache) == "on");
    CHECK(kernel > 0);
    CHECK(py > 0);
    // Both times are printed to 0.001 ms and the ratio to 0.01, from the unrounded times: with times of a
    // few microseconds the printed ratio is only within the range the rounding leaves.
    const double half = 0.0005;
    REQUIRE(kernel > half);
    CHECK(ratio >= (py - half) / (kernel + half) - 0.005);
    CHECK(ratio <= (py + half) / (kernel - half) + 0.005);
    CHECK(diff >= 0);
    CHECK(diff < 1e-5);  // the same function: float rounding only
  }
  CHECK(rows == 4);
  // It compares fp32 tables on uniform loads: without them, refused naming the flags.
  auto b = test::run_cli("bench hashed-linear --device cpu --tokens 64 --dim 30 --bits 4 --repeats 1 --threads 1 "
                         "--tables bf16 --loads uniform --against-python");
  CHECK(b.code == 2);
  CHECK(b.output.find("add fp32 to --tables and uniform to --loads") != std::string::npos);
  auto p = test::run_cli(tiny + " --python /nonexistent/python3");
  CHECK(p.code == 2);
  CHECK(p.output.find("cannot run /nonexistent/python3") != std::string::npos);
}
