// `mnemoscope bench distributed`: data-parallel training (docs/training.md#distributed) with
// N = 1 (the one-process trainer, no group: the baseline) and N = 2, ... ranks on this
// machine, each rank a child process of this binary (hidden --child flags) with cores / N
// intra-op threads (so every N uses the same cores; --rank-threads T fixes T per rank). For
// each config: the median wall time of a step of the same global batch, tokens/s, rank 0's
// forward/backward time, the median gradient allreduce time on rank 0 (waiting for the
// slowest rank included) and its share of the step, and the speed-up over the baseline.
// --device cuda: each rank trains on GPU LOCAL_RANK with an NCCL group, and every N (1
// included) runs with a group, after the one-process baseline without one: on one GPU, the
// N = 1 row is NCCL's overhead over the plain path (docs/benchmarks.md#distributed).
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/cli/cli.h"
#include "app/cli/flags.h"

#include "core/dist/process_group.h"
#include "core/platform/blas.h"
#include "core/train/trainer.h"
#include "core/nn/torch_compat.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace mnemo::app {

namespace {

struct BenchDistOptions {
  std::string configs = "copy-rmt,memformer-mnist";  // names in sessions/ or paths
  std::string nprocs = "1,2";                         // the first is the baseline
  int64_t steps = 4;                                  // timed steps per run, after the warm-up
  int64_t warmup = 1;
  int64_t batch = 0;                                  // global batch (0 = the config's)
  double timeout = 120;                               // --dist-timeout of the ranks
  int rank_threads = 0;                               // intra-op threads per rank (0 = cores / N)
  std::string device = "cpu";                         // cpu (Gloo) | cuda (NCCL)
  // hidden: one rank
  std::string child;
  int rank = 0, world = 1, port = 0;
};

std::string config_path(const std::string& name) {
  if (name.find('/') != std::string::npos || name.find(".json") != std::string::npos) return name;
  return find_session_config(name + ".json");
}

TrainingConfig bench_config(const BenchDistOptions& o, const std::string& path) {
  TrainingConfig cfg = load_training_config(path, {});
  cfg.train.eval_every = 0;
  cfg.train.curriculum = CurriculumConfig{};
  if (o.batch > 0) cfg.train.batch = o.batch;
  cfg.train.steps = o.warmup + o.steps + 1;
  return cfg;
}

// One rank: trains warmup + steps steps; rank 0 prints one JSON line.
int run_rank(const BenchDistOptions& o, std::ostream& out) {
  const TrainingConfig cfg = bench_config(o, o.child);
  std::unique_ptr<dist::ProcessGroup> pg;
  const bool cuda = o.device == "cuda";
  Trainer t(cfg, cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.rank)) : torch::Device(torch::kCPU));
  if (o.port > 0) {  // run_ranks gives a port when this run has a group
    dist::DistOptions d;
    d.backend = cuda ? "nccl" : "gloo";
    d.rank = o.rank;
    d.world_size = o.world;
    d.local_rank = o.rank;
    d.master_port = o.port;
    d.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout * 1000));
    pg = dist::ProcessGroup::connect(d);
    t.set_process_group(pg.get());
    t.sync_from_rank0();
  }
  for (int64_t i = 0; i < o.warmup; ++i) t.train_step();
  if (cuda) torch::cuda::synchronize();
  std::vector<double> step_ms, reduce_ms, compute_ms, slowest_ms;
  for (int64_t i = 0; i < o.steps; ++i) {
    const StepMetrics m = t.train_step();
    step_ms.push_back(1000.0 * m.seconds);
    reduce_ms.push_back(1000.0 * m.allreduce_seconds);
    if (!m.rank_seconds.empty()) {
      compute_ms.push_back(1000.0 * m.rank_seconds[static_cast<size_t>(o.rank)]);
      slowest_ms.push_back(1000.0 * *std::max_element(m.rank_seconds.begin(), m.rank_seconds.end()));
    }
  }
  if (o.rank != 0) return 0;
  int64_t grad_bytes = 0;
  for (const auto& p : t.model()->parameters()) grad_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  nlohmann::json j = {{"step_ms", bench::median(step_ms)},
                      {"allreduce_ms", bench::median(reduce_ms)},
                      {"compute_ms", bench::median(compute_ms)},
                      {"slowest_ms", bench::median(slowest_ms)},
                      {"tokens", cfg.train.batch * t.task().length()},
                      {"grad_mib", static_cast<double>(grad_bytes) / (1024.0 * 1024.0)}};
  out << j.dump() << "\n";
  return 0;
}

// Runs n ranks of one config; rank 0's JSON line (throws UsageError naming the failure).
nlohmann::json run_ranks(const BenchDistOptions& o, const std::string& cfg, int n, int threads, bool group) {
  const std::string exe = bench::self_exe();
  const int port = group ? dist::free_tcp_port() : 0;
  bench::TempFile result("mnemo-bench-dist-");  // rank 0's stdout
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> args = {exe,         "--threads", std::to_string(threads), "bench", "distributed",
                                      "--child",   cfg,         "--rank",                 std::to_string(r),
                                      "--world",   std::to_string(n), "--port",           std::to_string(port),
                                      "--steps",   std::to_string(o.steps), "--warmup",   std::to_string(o.warmup),
                                      "--batch",   std::to_string(o.batch), "--dist-timeout", std::to_string(o.timeout),
                                      "--device",  o.device};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (r == 0) ::dup2(result.fd(), 1);
      else {
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) ::dup2(null, 1);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  result.close();
  std::string failure;
  for (int r = 0; r < n; ++r) {
    int st = 0;
    ::waitpid(pids[static_cast<size_t>(r)], &st, 0);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && failure.empty())
      failure = "rank " + std::to_string(r) + " of " + std::to_string(n) + " failed (status " + std::to_string(st) + ")";
  }
  std::ifstream in(result.path());
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') last = line;
  if (!failure.empty() || last.empty())
    throw UsageError("bench distributed: " + cfg + " with " + std::to_string(n) + " ranks: " +
                     (failure.empty() ? "no result" : failure));
  return nlohmann::json::parse(last);
}

using bench::fmt;

class BenchDistributed : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    auto* c = parent.add_subcommand("distributed",
                                    "data-parallel training: step time and gradient allreduce time for N = 1, 2 ranks");
    c->add_option("--configs", o_.configs, "comma-separated configs (names in sessions/ or paths; default copy-rmt,memformer-mnist)");
    c->add_option("--nprocs", o_.nprocs, "comma-separated rank counts, the first the baseline (default 1,2)");
    c->add_option("--steps", o_.steps, "timed steps per run after the warm-up (default 4)");
    c->add_option("--warmup", o_.warmup, "untimed steps first (default 1)");
    c->add_option("--batch", o_.batch, "global batch (default: the config's train.batch)");
    c->add_option("--dist-timeout", o_.timeout, "the ranks' timeout in seconds (default 120)");
    c->add_option("--device", o_.device,
                  "cpu (Gloo, default) or cuda (NCCL, one GPU per rank; every N runs with a group after the "
                  "no-group baseline, so N = 1 shows NCCL's overhead)");
    c->add_option("--rank-threads", o_.rank_threads,
                  "intra-op threads per rank (default 0: cores / N, so every N uses the same cores)");
    c->add_option("--child", o_.child, "internal: one rank of CONFIG")->group("");
    c->add_option("--rank", o_.rank, "internal")->group("");
    c->add_option("--world", o_.world, "internal")->group("");
    c->add_option("--port", o_.port, "internal")->group("");
    return c;
  }

  int run(std::ostream& out) override {
    if (o_.steps < 1 || o_.steps > 1000) throw UsageError("--steps " + std::to_string(o_.steps) + " must be in 1..1000");
    if (o_.warmup < 0 || o_.warmup > 1000) throw UsageError("--warmup must be in 0..1000");
    if (o_.batch < 0) throw UsageError("--batch must be >= 1 (0 = the config's)");
    if (o_.device != "cpu" && o_.device != "cuda") throw UsageError("--device '" + o_.device + "' must be cpu or cuda");
    const bool cuda = o_.device == "cuda";
    if (!o_.child.empty()) return run_rank(o_, out);
    std::vector<int> ns;
    for (const auto& s : split_list(o_.nprocs)) {
      int n = 0;
      try {
        n = std::stoi(s);
      } catch (const std::exception&) {
        n = 0;
      }
      if (n < 1 || n > 64) throw UsageError("--nprocs: '" + s + "' must be a rank count in 1..64");
      ns.push_back(n);
    }
    if (ns.empty()) throw UsageError("--nprocs: give at least one rank count, e.g. 1,2");
    if (!cuda && !dist::has_gloo()) throw UsageError("bench distributed: this build has no Gloo backend");
    if (cuda) {
      if (!dist::has_nccl()) throw UsageError("bench distributed --device cuda: this build has no NCCL backend");
      const int gpus = cuda_devices();
      for (int n : ns)
        if (n > gpus)
          throw UsageError("--nprocs " + std::to_string(n) + ": --device cuda runs one rank per GPU and this machine has " +
                           std::to_string(gpus));
    }
    std::vector<std::pair<std::string, std::string>> cfgs;
    for (const auto& name : split_list(o_.configs)) {
      const std::string path = config_path(name);
      const TrainingConfig cfg = bench_config(o_, path);  // ConfigError (e.g. MNIST not fetched) before any run
      for (int n : ns)
        if (n > cfg.train.batch)
          throw UsageError("--nprocs " + std::to_string(n) + " > train.batch " + std::to_string(cfg.train.batch) + " of " + name);
      cfgs.emplace_back(name, path);
    }
    if (o_.rank_threads < 0) throw UsageError("--rank-threads must be >= 0 (0 = cores / N)");
    const int cores = platform::cpu_cores();
    out << "bench distributed: " << o_.steps << " timed steps after " << o_.warmup << " warm-up per run; "
        << (o_.rank_threads > 0 ? std::to_string(o_.rank_threads) + " threads per rank"
                                : "every N uses the same " + std::to_string(cores) + " cores (cores / N threads per rank)")
        << "; N = " << ns.front() << " is the baseline" << (ns.front() == 1 ? " (one process, no group)" : "") << "\n"
        << "BLAS " << platform::probe_blas().summary() << "\n\n";
    char head[256];
    std::snprintf(head, sizeof head, "%-18s %7s %7s %10s %11s %12s %13s %10s %8s\n", "config", "N", "threads",
                  "step ms", "tokens/s", "compute ms", "allreduce ms", "share", "speed-up");
    out << head;
    // On CUDA the baseline is one process without a group, then every N with an NCCL group.
    std::vector<std::pair<int, bool>> runs;  // (N, with a group)
    if (cuda) runs.emplace_back(1, false);
    for (int n : ns) runs.emplace_back(n, cuda || n > 1);
    for (const auto& [name, path] : cfgs) {
      double base = 0, grad_mib = 0;
      for (const auto& [n, group] : runs) {
        const int threads = o_.rank_threads > 0 ? o_.rank_threads : std::max(1, cores / n);
        out.flush();
        const nlohmann::json j = run_ranks(o_, path, n, threads, group);
        const double step = j["step_ms"].get<double>();
        if (base == 0) base = step;
        const double reduce = j["allreduce_ms"].get<double>();
        grad_mib = j["grad_mib"].get<double>();
        const std::string label = cuda ? std::to_string(n) + (group ? " nccl" : " plain") : std::to_string(n);
        char row[320];
        std::snprintf(row, sizeof row, "%-18s %7s %7d %10.2f %11.0f %12s %13s %10s %7.3fx\n", name.c_str(), label.c_str(),
                      threads, step, j["tokens"].get<double>() / (step / 1000.0),
                      group ? fmt("%.2f", j["compute_ms"].get<double>()).c_str() : "-",
                      group ? fmt("%.3f", reduce).c_str() : "-",
                      group ? fmt("%.1f%%", 100.0 * reduce / step).c_str() : "-", base / step);
        out << row;
      }
      out << "  " << name << ": " << fmt("%.2f", grad_mib) << " MiB of gradients in one flattened allreduce per step\n";
    }
    out << bench::machine_line() << "\n";
    return 0;
  }

 private:
  BenchDistOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_distributed() { return std::make_unique<BenchDistributed>(); }

}  // namespace mnemo::app
