// `mnemoscope bench hashed-linear`: the MemoryFormer Memory Layer against a dense Linear of
// the same sizes, in one process (docs/architecture.md#build). Prints FLOPs, wall time and ratios, and on
// CUDA the achieved memory bandwidth of the forward against the GPU's peak.
#include "app/bench/benches.h"
#include "app/bench/hashed_linear_cpu.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"

#include "app/cli/cli.h"
#include "core/nn/hashed_linear.h"
#include "kernels/device_info.h"

#ifdef MNEMO_WITH_CUDA
#include "kernels/hashed_lookup.cuh"
#endif

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <functional>

namespace mnemo::app {

namespace {

struct BenchHashedOptions {
  std::vector<int64_t> tokens = {2048, 16384};  // rows N per call
  int64_t dim = 512;                            // d_in = d_out
  int64_t bits = 8;                             // tau (K = dim / tau tables)
  int64_t repeats = 7;                          // timed runs per case (median reported)
  double zipf = 1.1;                            // exponent of the skewed bucket load
  std::string device = "all";                   // cpu | cuda | all (cuda only when built with and present)
  bench::HashedCpuOptions cpu;                  // --threads --tables --cpu-kernels (app/bench/hashed_linear_cpu.h)
};

using bench::Timing;

// Wall and CPU time of f, synchronising the GPU around it on CUDA.
Timing time_ms(const std::function<void()>& f, bool cuda) {
  if (cuda) torch::cuda::synchronize();
  return bench::time_call([&] {
    f();
    if (cuda) torch::cuda::synchronize();
  });
}

// x [n, k * bits] whose chunks fall in buckets drawn from p(rank) ~ rank^-s, each table with
// its own random rank -> bucket map; magnitudes |N(0, 1)|. s = 0 gives uniform buckets.
torch::Tensor make_input(int64_t n, int64_t k, int64_t bits, double s, torch::Device dev) {
  if (s <= 0) return torch::randn({n, k * bits}).to(dev);
  const int64_t r = int64_t{1} << bits;
  auto w = torch::arange(1, r + 1, torch::kFloat64).pow(-s);
  auto ranks = torch::multinomial((w / w.sum()).unsqueeze(0).expand({k, r}).contiguous(), n, /*replacement=*/true);
  auto perm = torch::argsort(torch::rand({k, r}), /*dim=*/1, /*descending=*/false);  // rank -> bucket, per table
  auto codes = perm.gather(1, ranks).t().contiguous();  // [n, k]
  auto bit = codes.unsqueeze(-1).bitwise_right_shift(torch::arange(bits, torch::kInt64)).bitwise_and(1);
  auto x = (bit.to(torch::kFloat32) * 2 - 1) * torch::randn({n, k, bits}).abs();
  return x.view({n, k * bits}).to(dev);
}

struct Row {
  std::string device, pass, loads;
  int64_t tokens = 0;
  double hashed_ms = 0, dense_ms = 0, hashed_cpu_ms = 0, dense_cpu_ms = 0, hashed_flop = 0, dense_flop = 0, bytes = 0;
};

using bench::fmt;

}  // namespace

static CLI::App* add_bench_hashed_command(CLI::App* bench, BenchHashedOptions& o) {
  auto* c = bench->add_subcommand("hashed-linear", "MemoryFormer Memory Layer vs dense Linear: time, FLOPs, bandwidth");
  c->add_option("--tokens", o.tokens, "rows per call (default 2048 16384)")->delimiter(',');
  c->add_option("--dim", o.dim, "d_in = d_out (default 512)");
  c->add_option("--bits", o.bits, "tau, bits per chunk (default 8)");
  c->add_option("--repeats", o.repeats, "timed runs per case, median reported (default 7)");
  c->add_option("--zipf", o.zipf, "exponent of the skewed bucket load (default 1.1)");
  c->add_option("--device", o.device, "cpu, cuda or all (default all: CUDA when built with it and present)");
  c->add_option("--threads", o.cpu.threads, "CPU: thread counts to run (default 1,2)")->delimiter(',');
  c->add_option("--tables", o.cpu.tables, "CPU: table dtypes of the hashed layer, fp32 bf16 fp16 (default fp32,bf16)")
      ->delimiter(',');
  c->add_option("--cpu-kernels", o.cpu.cpu_kernels, "CPU: auto, portable, avx2 or avx512 (default auto)");
  c->add_option("--table-cache", o.cpu.table_cache,
                "CPU: on (tables kept packed between calls; fwd+bwd repacks once per call, as after an optimizer "
                "step), off (packed inside every call) (default on,off)")
      ->delimiter(',');
  c->add_option("--passes", o.cpu.passes, "CPU: forward, fwd+bwd (default both)")->delimiter(',');
  c->add_option("--loads", o.cpu.loads, "CPU: uniform, zipf (default both)")->delimiter(',');
  c->add_flag("--against-python", o.cpu.against_python,
              "CPU: also time the same layer in PyTorch ops (mnemoscope.models.HashedProjection, "
              "app/bench/python/hashed_eager.py) on the same fp32 tables and uniform inputs, and compare its output");
  c->add_option("--python", o.cpu.python, "interpreter for --against-python (default /usr/bin/python3, with python3-torch)");
  return c;
}

static int run_bench_hashed(const BenchHashedOptions& o, std::ostream& out) {
  if (o.bits < 1 || o.bits > 16) throw UsageError("--bits " + std::to_string(o.bits) + " is out of range 1..16");
  // The CPU part takes d_in = K tau, K = dim / tau, when tau does not divide dim (the map over d and
  // tau in docs/benchmarks.md); CUDA keeps d_in = d_out.
  if (o.dim < o.bits || (o.dim % o.bits != 0 && o.device != "cpu"))
    throw UsageError("--dim " + std::to_string(o.dim) + " must be a positive multiple of --bits " + std::to_string(o.bits) +
                     (o.dim >= o.bits ? " (or run --device cpu, which takes d_in = (dim / bits) * bits)" : ""));
  if (o.repeats < 1) throw UsageError("--repeats must be >= 1");
  if (o.tokens.empty()) throw UsageError("--tokens: give at least one row count");
  for (auto n : o.tokens)
    if (n < 1 || n > (int64_t{1} << 22)) throw UsageError("--tokens " + std::to_string(n) + " is out of range 1..4194304");
  if (!(o.zipf > 0) || o.zipf > 10) throw UsageError("--zipf must be in (0, 10]");
  const bool cuda_ok = kernels::built_with_cuda() && torch::cuda::is_available();
  std::vector<torch::Device> devices;  // CUDA only: the CPU cases run in bench::run_hashed_linear_cpu below
  if (o.device == "cuda" && !cuda_ok)
    throw UsageError("--device cuda: no CUDA here (kernels built with CUDA: " +
                     std::string(kernels::built_with_cuda() ? "yes" : "no") + ", LibTorch sees a GPU: " +
                     (torch::cuda::is_available() ? "yes" : "no") + ")");
  if ((o.device == "cuda" || o.device == "all") && cuda_ok) devices.push_back(torch::Device(torch::kCUDA, 0));
  if (o.device != "cpu" && o.device != "cuda" && o.device != "all") throw UsageError("--device must be cpu, cuda or all");
  bench::HashedCpuOptions cpu = o.cpu;
  cpu.tokens = o.tokens;
  cpu.dim = o.dim;
  cpu.bits = o.bits;
  cpu.repeats = o.repeats;
  cpu.zipf = o.zipf;
  const bool on_cpu = o.device == "cpu" || o.device == "all";
  if (on_cpu) bench::validate_hashed_cpu_options(cpu);  // before anything is printed

  const int64_t d = o.dim, bits = o.bits, k = d / bits, r = int64_t{1} << bits;
  char line[512];
  std::snprintf(line, sizeof line,
                "bench hashed-linear: d_in = %lld, d_out = %lld, tau = %lld, K = %lld tables x %lld buckets (%.1f MiB fp32), "
                "%lld timed runs per case (median), CPU threads %d\n",
                static_cast<long long>(k * bits), static_cast<long long>(d), static_cast<long long>(bits), static_cast<long long>(k),
                static_cast<long long>(r), static_cast<double>(k * r * d) * 4 / (1 << 20),
                static_cast<long long>(o.repeats), torch::get_num_threads());
  out << line;
  out << "FLOPs per forward: dense 2*N*d*d; hashed 2*N*K*d (gathered multiply-adds) + 5*N*d (codes, exp counted as 1);\n"
         "forward+backward counted as 3x forward for both. Loads: uniform = x ~ N(0,1); zipf = buckets drawn with\n"
         "p(rank) ~ rank^-" << o.zipf << " per table.\n";
  if (!cuda_ok)
    out << "CUDA: not measured (kernels built with CUDA: " << (kernels::built_with_cuda() ? "yes" : "no")
        << ", GPU visible: " << (torch::cuda::is_available() ? "yes" : "no") << ")\n";
  if (on_cpu) bench::run_hashed_linear_cpu(cpu, out);
  if (devices.empty()) return 0;

  std::vector<Row> rows;
  for (const auto& dev : devices) {
    const bool cuda = dev.is_cuda();
    for (const int64_t n : o.tokens) {
      torch::manual_seed(1234);
      auto tables = (torch::rand({k, r, d}) * 2 - 1).div(std::sqrt(static_cast<double>(k))).to(dev);
      auto w = (torch::rand({d, d}) * 2 - 1).div(std::sqrt(static_cast<double>(d))).to(dev);
      auto b = torch::zeros({d}).to(dev);
      auto dy = torch::randn({n, d}).to(dev);
      const double f_dense = 2.0 * n * d * d, f_hashed = 2.0 * n * k * d + 5.0 * n * d;
      const double fwd_bytes = 4.0 * n * d + 16.0 * n * k + 4.0 * n * k * d + 4.0 * n * d;  // x, bucket/p w+r, rows, y
      struct Case {
        std::string pass, loads;
        torch::Tensor x;
        bool backward, deterministic;
      };
      std::vector<Case> cases;
      auto xu = make_input(n, k, bits, 0.0, dev), xz = make_input(n, k, bits, o.zipf, dev);
      const std::string zname = "zipf" + fmt("%.2g", o.zipf);
      cases.push_back({"forward", "uniform", xu, false, false});
      cases.push_back({"forward", zname, xz, false, false});
      for (bool det : cuda ? std::vector<bool>{false, true} : std::vector<bool>{true}) {
        const std::string pass = cuda ? (det ? "fwd+bwd (sorted, deterministic)" : "fwd+bwd (atomics)") : "fwd+bwd";
        cases.push_back({pass, "uniform", xu, true, det});
        cases.push_back({pass, zname, xz, true, det});
      }
      std::vector<std::vector<double>> th(cases.size()), td(cases.size()), ch(cases.size()), cd(cases.size());
      for (int64_t rep = -1; rep < o.repeats; ++rep) {  // rep -1 warms up; contenders interleaved
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          const Case& c = cases[ci];
          MemoryLayerOptions opt{bits, 1.0, c.deterministic};
          Timing hm, dm;
          if (!c.backward) {
            torch::NoGradGuard g;
            hm = time_ms([&] { (void)memory_layer(c.x, tables, opt); }, cuda);
            dm = time_ms([&] { (void)torch::nn::functional::linear(c.x, w, b); }, cuda);
          } else {
            auto xl = c.x.detach().requires_grad_(true), tl = tables.detach().requires_grad_(true);
            auto wl = w.detach().requires_grad_(true), bl = b.detach().requires_grad_(true);
            hm = time_ms([&] { memory_layer(xl, tl, opt).y.backward(dy); }, cuda);
            xl.mutable_grad() = torch::Tensor();  // no gradient accumulation in the next timing
            dm = time_ms([&] { torch::nn::functional::linear(xl, wl, bl).backward(dy); }, cuda);
          }
          if (rep >= 0) {
            th[ci].push_back(hm.wall_ms);
            td[ci].push_back(dm.wall_ms);
            ch[ci].push_back(hm.cpu_ms);
            cd[ci].push_back(dm.cpu_ms);
          }
        }
      }
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const double mul = cases[ci].backward ? 3.0 : 1.0;
        rows.push_back({cuda ? "cuda" : "cpu", cases[ci].pass, cases[ci].loads, n, bench::median(th[ci]), bench::median(td[ci]),
                        bench::median(ch[ci]), bench::median(cd[ci]), mul * f_hashed, mul * f_dense,
                        cases[ci].backward ? 0.0 : fwd_bytes});
      }
    }
  }

  out << "wall = elapsed time; cpu = this process's CPU time over the same call (all threads; on a shared machine it\n"
         "leaves out time the process spent descheduled). speed-up = dense / hashed. GF/s from wall time.\n";
  std::snprintf(line, sizeof line, "%-5s %6s %-31s %-8s %10s %9s %8s %9s %9s %8s %9s %8s %9s %9s\n", "dev", "tokens",
                "pass", "loads", "hash_wall", "dense_wall", "speed-up", "hash_cpu", "dense_cpu", "speed-up",
                "hash_GFLOP", "dense_GFLOP", "hash_GF/s", "dense_GF/s");
  out << line;
  for (const auto& row : rows) {
    std::snprintf(line, sizeof line, "%-5s %6lld %-31s %-8s %10.3f %9.3f %7.2fx %9.3f %9.3f %7.2fx %9.3f %11.3f %9.1f %9.1f\n",
                  row.device.c_str(), static_cast<long long>(row.tokens), row.pass.c_str(), row.loads.c_str(),
                  row.hashed_ms, row.dense_ms, row.dense_ms / row.hashed_ms, row.hashed_cpu_ms, row.dense_cpu_ms,
                  row.dense_cpu_ms / row.hashed_cpu_ms, row.hashed_flop / 1e9, row.dense_flop / 1e9,
                  row.hashed_flop / row.hashed_ms / 1e6, row.dense_flop / row.dense_ms / 1e6);
    out << line;
  }
  // Backward alone = bench::median(fwd+bwd) - bench::median(forward) of the same loads.
  out << "backward alone (fwd+bwd minus forward, same loads):\n";
  for (const auto& fb : rows) {
    if (fb.pass == "forward") continue;
    for (const auto& f : rows) {
      if (f.pass != "forward" || f.device != fb.device || f.tokens != fb.tokens || f.loads != fb.loads) continue;
      std::snprintf(line, sizeof line,
                    "  %-5s %6lld %-31s %-8s wall: hashed %9.3f ms dense %9.3f ms (%.2fx)   cpu: hashed %9.3f ms "
                    "dense %9.3f ms (%.2fx)\n",
                    fb.device.c_str(), static_cast<long long>(fb.tokens), fb.pass.c_str(), fb.loads.c_str(),
                    fb.hashed_ms - f.hashed_ms, fb.dense_ms - f.dense_ms,
                    (fb.dense_ms - f.dense_ms) / (fb.hashed_ms - f.hashed_ms), fb.hashed_cpu_ms - f.hashed_cpu_ms,
                    fb.dense_cpu_ms - f.dense_cpu_ms, (fb.dense_cpu_ms - f.dense_cpu_ms) / (fb.hashed_cpu_ms - f.hashed_cpu_ms));
      out << line;
    }
  }
  // Goals (docs/benchmarks.md, bench hashed-linear): CPU forward >= 3x faster than dense; CUDA forward >= 60% of peak bandwidth.
  for (const auto& row : rows) {
    if (row.pass != "forward" || row.loads != "uniform") continue;
    if (row.device == "cpu") {
      const double s = row.dense_ms / row.hashed_ms, sc = row.dense_cpu_ms / row.hashed_cpu_ms;
      std::snprintf(line, sizeof line,
                    "goal CPU forward >= 3x faster than dense, N = %lld: wall %.2fx -> %s; cpu time %.2fx -> %s\n",
                    static_cast<long long>(row.tokens), s, s >= 3.0 ? "met" : "MISSED", sc,
                    sc >= 3.0 ? "met" : "MISSED");
      out << line;
    } else {
      double peak = 0;
#ifdef MNEMO_WITH_CUDA
      peak = kernels::cuda_peak_bandwidth_gbs(0);
#endif
      const double gbs = row.bytes / row.hashed_ms / 1e6;
      std::snprintf(line, sizeof line,
                    "goal CUDA forward >= 60%% of peak bandwidth, N = %lld: %.0f GB/s of %.0f GB/s peak = %.0f%% -> %s "
                    "(bytes = x + bucket/p + gathered rows + y; L2 hits can push this past DRAM peak)\n",
                    static_cast<long long>(row.tokens), gbs, peak, peak > 0 ? 100.0 * gbs / peak : 0.0,
                    peak > 0 && gbs >= 0.6 * peak ? "met" : "MISSED");
      out << line;
    }
  }
  return 0;
}

namespace {
class BenchHashedLinear : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_bench_hashed_command(&parent, o_); }
  int run(std::ostream& out) override { return run_bench_hashed(o_, out); }

 private:
  BenchHashedOptions o_;
};
}  // namespace

std::unique_ptr<Command> make_bench_hashed_linear() { return std::make_unique<BenchHashedLinear>(); }

}  // namespace mnemo::app
