// `mnemoscope bench optimizer`: the trainer's optimizer step on a config's parameters —
// LibTorch's torch::optim::AdamW::step against the fused step (core/train/optim.h adamw_step,
// kernels/adamw_cpu.h), and the gradient norm through a float64 copy (the trainer's earlier
// code) against the trainer's clip_grad_norm (kernels::sum_of_squares_cpu) — in one process,
// on two copies of the same weights and gradients, alternating, medians printed with ratios.
// It also checks that both AdamW paths end with the same weights.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/cli/cli.h"
#include "app/cli/flags.h"

#include "core/models/factory.h"
#include "core/train/optim.h"
#include "core/train/train_config.h"
#include "kernels/hashed_lookup_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace mnemo::app {

namespace {

struct BenchOptimizerOptions {
  std::string configs;  // comma list; default below
  int64_t repeats = 15;
  int64_t threads = 1;
};

constexpr const char* kDefaultConfigs[] = {"hashed-lm-hashed.json", "hashed-lm-dense.json", "text-rmt.json",
                                           "text-rmt-hashed.json"};

// The model's trainable parameters in the trainer's groups (make_adamw), with the same random
// gradients on both copies.
struct OptSide {
  MemoryModel model;
  std::unique_ptr<torch::optim::AdamW> opt;
};

OptSide make_opt_side(const TrainingConfig& cfg) {
  OptSide s{make_model(cfg.model, cfg.train.seed), nullptr};
  AdamWSettings a;
  a.lr = cfg.train.lr;
  a.weight_decay = cfg.train.weight_decay;
  s.opt = make_adamw(*s.model, a);
  return s;
}

void set_opt_grads(OptSide& a, OptSide& b, uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed));
  auto pa = a.model->parameters(), pb = b.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!pa[i].requires_grad()) continue;
    torch::Tensor g = torch::randn(pa[i].sizes()) * 1e-2;
    pa[i].mutable_grad() = g.clone();
    pb[i].mutable_grad() = g;
  }
}

// The trainer's norm before the kernel: a float64 copy of every gradient.
double old_grad_norm(torch::nn::Module& m) {
  double sq = 0;
  for (auto& p : m.parameters())
    if (p.grad().defined()) sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  return std::sqrt(sq);
}

int run_bench_optimizer(const BenchOptimizerOptions& o, std::ostream& out) {
  if (o.repeats < 1 || o.repeats > 10000) throw UsageError("bench optimizer: --repeats must be in 1..10000");
  if (o.threads < 1 || o.threads > 256) throw UsageError("bench optimizer: --threads must be in 1..256");
  std::vector<std::string> paths = split_list(o.configs);
  if (paths.empty())
    for (const char* name : kDefaultConfigs) paths.push_back(find_session_config(name));
  std::vector<TrainingConfig> cfgs;
  for (const auto& path : paths) {
    try {
      cfgs.push_back(TrainingConfig::load(path));
    } catch (const std::exception& e) {
      throw UsageError(std::string("--configs: ") + e.what());
    }
  }
  torch::set_num_threads(static_cast<int>(o.threads));
  out << "bench optimizer: one AdamW step and one gradient norm on each config's parameters (random gradients), "
      << o.repeats << " alternating repeats, median ms; " << o.threads << " intra-op thread(s), kernel path "
      << kernels::cpu_isa_name(kernels::cpu_isa()) << "\n  " << bench::machine_line() << "\n\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-26s %10s %11s %11s %7s %11s %11s %7s %s\n", "config", "params", "torch AdamW",
                "fused", "ratio", "norm f64", "norm fused", "ratio", "same weights");
  out << buf;
  for (size_t c = 0; c < cfgs.size(); ++c) {
    const TrainingConfig& cfg = cfgs[c];
    OptSide a = make_opt_side(cfg), b = make_opt_side(cfg);
    int64_t n = 0;
    for (const auto& p : a.model->parameters())
      if (p.requires_grad()) n += p.numel();
    std::vector<double> t_torch, t_fused, t_old, t_new;
    bool fused_ran = true;
    double norm_old = 0, norm_new = 0;
    for (int64_t r = 0; r < o.repeats + 1; ++r) {  // the first round (state creation) untimed
      set_opt_grads(a, b, 1000 + static_cast<uint64_t>(r));
      const auto ta = bench::time_call([&] { a.opt->step(); });
      const auto tb = bench::time_call([&] { fused_ran = adamw_step(*b.opt) && fused_ran; });
      const auto tc = bench::time_call([&] { norm_old = old_grad_norm(*a.model); });
      const auto td = bench::time_call([&] { norm_new = clip_grad_norm(*b.model, 0.0); });  // the trainer's, no clipping
      if (r == 0) continue;
      t_torch.push_back(ta.wall_ms);
      t_fused.push_back(tb.wall_ms);
      t_old.push_back(tc.wall_ms);
      t_new.push_back(td.wall_ms);
    }
    // Bitwise on the LibTorch the kernel follows (Debian's 1.13); another build's vectorised
    // kernels may round a step differently, so the largest relative difference is printed too.
    bool same = true;
    double max_rel = 0;
    auto pa = a.model->parameters(), pb = b.model->parameters();
    for (size_t i = 0; i < pa.size(); ++i) {
      if (torch::equal(pa[i], pb[i])) continue;
      same = false;
      const torch::Tensor x = pa[i].detach().to(torch::kFloat64), y = pb[i].detach().to(torch::kFloat64);
      const torch::Tensor rel = (x - y).abs() / torch::maximum(x.abs(), y.abs()).clamp_min(1e-30);
      max_rel = std::max(max_rel, rel.max().item<double>());
    }
    const std::string verdict = same ? "yes" : bench::fmt("NO (max relative difference %.1e)", max_rel);
    const double mt = bench::median(t_torch), mf = bench::median(t_fused), mo = bench::median(t_old),
                 mn = bench::median(t_new);
    const std::string name = std::filesystem::path(paths[c]).filename().string();
    std::snprintf(buf, sizeof buf, "%-26s %10lld %11.3f %11.3f %6.2fx %11.3f %11.3f %6.2fx %s%s\n", name.c_str(),
                  static_cast<long long>(n), mt, mf, mt / mf, mo, mn, mo / mn, verdict.c_str(),
                  fused_ran ? "" : " (fell back to torch's step)");
    out << buf;
    if (std::abs(norm_old - norm_new) > 1e-12 * norm_old) {
      std::snprintf(buf, sizeof buf, "  the two norms differ: %.17g vs %.17g\n", norm_old, norm_new);
      out << buf;
    }
  }
  return 0;
}

class BenchOptimizer : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "optimizer", "the trainer's AdamW step and gradient norm: LibTorch's vs the fused kernels, on configs' parameters");
    c->add_option("--configs", o_.configs,
                  "comma list of training configs (default sessions/hashed-lm-hashed.json, hashed-lm-dense.json, "
                  "text-rmt.json, text-rmt-hashed.json)");
    c->add_option("--repeats", o_.repeats, "timed steps per side (median; default 15)");
    c->add_option("--threads", o_.threads, "LibTorch intra-op threads (default 1)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_optimizer(o_, out); }

 private:
  BenchOptimizerOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_optimizer() { return std::make_unique<BenchOptimizer>(); }

}  // namespace mnemo::app
