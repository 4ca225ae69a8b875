// `mnemoscope bench training-strategies`: full BPTT, gradient checkpointing and MRBP
// (core/train/rollout.h) training the same model on the same rollout. Each strategy runs in
// a fresh child process (the same binary, started with the hidden --child flag) so that
// every peak-memory number is clean; the parent prints peak memory and time per rollout,
// relative to BPTT (Memformer (docs/references.md#memformer) App. A, Table 3).
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/flags.h"
#include "app/cli/assets.h"

#include "app/cli/cli.h"
#include "core/data/tokenizer.h"
#include "core/models/factory.h"
#include "core/train/evaluate.h"
#include "core/train/memory_stats.h"
#include "core/train/rollout.h"

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace mnemo::app {

namespace {

struct BenchStrategiesOptions {
  std::string config;     // model config ("" = sessions/memformer-mnist.json)
  int64_t batch = 8;      // sequences per rollout
  int64_t horizon = 8;    // segments per rollout (time horizon)
  int64_t rollouts = 2;   // timed rollouts per child, after one untimed warm-up
  int64_t rounds = 2;     // children per strategy, interleaved (bptt, checkpoint, mrbp, bptt, ...);
                          // time = median over all timed rollouts, memory = largest peak
  int64_t threads = 0;    // LibTorch intra-op threads in the children; 0 = LibTorch's default
  std::string device = "cpu";                        // cpu | cuda
  std::string strategies = "bptt,checkpoint,mrbp";  // the first one is the baseline
  std::string child;      // hidden: run this one strategy and print one JSON line
};

}  // namespace

namespace {



std::string config_path(const BenchStrategiesOptions& o) {
  return o.config.empty() ? find_session_config("memformer-mnist.json") : o.config;
}

void validate(const BenchStrategiesOptions& o) {
  if (o.batch < 1 || o.batch > 4096) throw UsageError("--batch " + std::to_string(o.batch) + " must be in 1..4096");
  if (o.horizon < 1 || o.horizon > 1024) throw UsageError("--horizon " + std::to_string(o.horizon) + " must be in 1..1024");
  if (o.rollouts < 1 || o.rollouts > 1000) throw UsageError("--rollouts " + std::to_string(o.rollouts) + " must be in 1..1000");
  if (o.rounds < 1 || o.rounds > 100) throw UsageError("--rounds " + std::to_string(o.rounds) + " must be in 1..100");
  if (o.threads < 0 || o.threads > 1024) throw UsageError("--threads " + std::to_string(o.threads) + " must be in 0..1024");
  parse_device_flag(o.device);
  const auto names = split_list(o.strategies);
  if (names.empty()) throw UsageError("--strategies is empty; give e.g. bptt,checkpoint,mrbp");
  for (const auto& n : names) {
    try {
      parse_strategy(n);
    } catch (const ConfigError&) {
      throw UsageError("--strategies: '" + n + "' is not a strategy; choose from bptt, checkpoint, mrbp");
    }
  }
}

ModelConfig load_config(const std::string& path) {
  try {
    return ModelConfig::load(path);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
}

// The same rollout for every strategy: random pixel-like tokens (0..255) of `batch`
// sequences. A model that predicts the next segment (Memformer) gets the next-segment layout
// of mnist_rollout (L = 98, horizon 8): step 0 reads <bos>, step t reads segment t-1 and
// predicts segment t. The others (RMT, Transformer-XL, MTN, ...) read segment t and predict
// each token's next one, the last predicting the next segment's first.
std::vector<SegmentInput> make_rollout(int64_t batch, int64_t horizon, int64_t len, bool next_segment,
                                       torch::Device dev) {
  auto g = torch::make_generator<at::CPUGeneratorImpl>(7);
  auto seq = torch::randint(0, 256, {batch, horizon * len + 1}, g, torch::kInt64);
  std::vector<SegmentInput> steps;
  for (int64_t t = 0; t < horizon; ++t) {
    SegmentInput in;
    in.valid = torch::ones({batch, len}, torch::kBool).to(dev);
    if (next_segment) {
      in.tokens = (t == 0 ? torch::full({batch, len}, ByteTokenizer::kBos, torch::kInt64)
                          : seq.narrow(1, (t - 1) * len, len).contiguous())
                      .to(dev);
      in.next_tokens = seq.narrow(1, t * len, len).contiguous().to(dev);
      in.next_valid = torch::ones({batch, len}, torch::kBool).to(dev);
    } else {
      in.tokens = seq.narrow(1, t * len, len).contiguous().to(dev);
      in.targets = seq.narrow(1, t * len + 1, len).contiguous().to(dev);
      in.target_valid = torch::ones({batch, len}, torch::kBool).to(dev);
    }
    steps.push_back(in);
  }
  return steps;
}

// The child: trains with one strategy and prints one JSON line on stdout.
int run_child(const BenchStrategiesOptions& o, std::ostream& out) {
  if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
  const torch::Device dev = parse_device_flag(o.device);
  const ModelConfig cfg = load_config(config_path(o));
  const Strategy strategy = parse_strategy(o.child);
  torch::manual_seed(0);
  MemoryModel model = make_model(cfg, 0, dev);
  model->train();
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  const auto segs = make_rollout(o.batch, o.horizon, cfg.segment_len, predicts_next_segment(*model), dev);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  const RolloutOptions ro{strategy, -1, true};

  PeakMemoryMeter meter(dev);
  meter.begin();  // baseline: the model, the optimizer and the data exist; no step has run
  std::vector<double> secs, cpu_secs;
  double first_loss = 0, first_grad_norm = 0;
  for (int64_t i = 0; i <= o.rollouts; ++i) {
    if (dev.is_cuda()) torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = (bench::process_cpu_ms() / 1000.0);
    opt.zero_grad();
    const RolloutResult r = run_rollout(*model, segs, model->initial_memory(o.batch), ro);
    const double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    if (dev.is_cuda()) torch::cuda::synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double c = (bench::process_cpu_ms() / 1000.0) - c0;
    if (i == 0) {
      first_loss = r.loss;
      first_grad_norm = norm;
    } else {
      secs.push_back(s);
      cpu_secs.push_back(c);
    }
  }
  const StepMemory m = meter.end();
  nlohmann::json j = {{"strategy", strategy_name(strategy)},
                      {"seconds", secs},
                      {"cpu_seconds", cpu_secs},
                      {"host_baseline", m.host_baseline_bytes},
                      {"host_peak", m.host_peak_bytes},
                      {"host_peak_since_begin", m.host_peak_since_begin},
                      {"device_baseline", m.device_baseline_bytes},
                      {"device_peak", m.device_peak_bytes},
                      {"device_peak_reserved", m.device_peak_reserved_bytes},
                      {"loss", first_loss},
                      {"grad_norm", first_grad_norm},
                      {"params", params},
                      {"threads", torch::get_num_threads()}};
  out << j.dump() << "\n";
  return 0;
}



std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown CPU";
}

using bench::fmt;

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

static CLI::App* add_bench_strategies_command(CLI::App* bench, BenchStrategiesOptions& o) {
  auto* c = bench->add_subcommand("training-strategies",
                                  "peak memory and time per rollout: BPTT vs gradient checkpointing vs MRBP");
  c->add_option("--config", o.config, "model config (default sessions/memformer-mnist.json)");
  c->add_option("--batch", o.batch, "sequences per rollout (default 8)");
  c->add_option("--horizon", o.horizon, "segments per rollout, the time horizon (default 8)");
  c->add_option("--rollouts", o.rollouts, "timed rollouts per process after one warm-up (default 2)");
  c->add_option("--rounds", o.rounds, "processes per strategy, interleaved (default 2)");
  c->add_option("--threads", o.threads, "LibTorch threads in each child (default: LibTorch's)");
  c->add_option("--device", o.device, "cpu or cuda (default cpu)");
  c->add_option("--strategies", o.strategies, "comma-separated, the first is the baseline (default bptt,checkpoint,mrbp)");
  c->add_option("--child", o.child, "internal: run one strategy and print JSON")->group("");
  return c;
}

static int run_bench_strategies(const BenchStrategiesOptions& o, std::ostream& out) {
  validate(o);
  if (!o.child.empty()) return run_child(o, out);

  const std::string cfg_path = config_path(o);
  const ModelConfig cfg = load_config(cfg_path);
  const std::string exe = bench::self_exe();
  struct Result {
    std::string name;
    nlohmann::json j;  // the largest peaks of its children, every timed rollout's seconds
  };
  std::vector<Result> results;
  for (const auto& name : split_list(o.strategies)) results.push_back({name, nlohmann::json()});
  for (int64_t round = 0; round < o.rounds; ++round) {
    for (auto& res : results) {
      out.flush();
      const std::vector<std::string> args = {
          exe, "bench", "training-strategies", "--child", res.name, "--config", cfg_path, "--batch",
          std::to_string(o.batch), "--horizon", std::to_string(o.horizon), "--rollouts", std::to_string(o.rollouts),
          "--threads", std::to_string(o.threads), "--device", o.device};
      int rc = 0;
      const std::string text = bench::run_child(args, "", false, &rc);
      if (rc != 0)
        throw std::runtime_error("the child process for strategy '" + res.name + "' failed with exit code " +
                                 std::to_string(rc) + (rc == 128 + 9 ? " (killed: out of memory?)" : ""));
      std::string trimmed = text;
      while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
      const auto nl = trimmed.rfind('\n');
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(nl == std::string::npos ? trimmed : trimmed.substr(nl + 1));
      } catch (const std::exception&) {
        throw std::runtime_error("the child process for strategy '" + res.name + "' printed no result: " + text);
      }
      if (res.j.is_null()) {
        res.j = j;
        continue;
      }
      for (const char* k : {"host_peak", "device_peak", "device_peak_reserved"})
        res.j[k] = std::max(res.j[k].get<int64_t>(), j[k].get<int64_t>());
      for (const char* k : {"host_baseline", "device_baseline"}) res.j[k] = std::min(res.j[k].get<int64_t>(), j[k].get<int64_t>());
      for (const char* k : {"seconds", "cpu_seconds"})
        for (const auto& sec : j[k]) res.j[k].push_back(sec);
    }
  }

  const auto& base = results.front().j;
  const bool cuda = o.device == "cuda";
  out << "bench training-strategies: " << cfg_path << "\n"
      << "  model: " << cfg.model << ", encoder " << cfg.layers << " + decoder " << cfg.dec_layers << " layers, d "
      << cfg.dim << ", " << cfg.heads << " heads, ff " << cfg.ff_width() << ", " << cfg.slots << " slots, L "
      << cfg.segment_len << ", " << fmt("%.2f", base["params"].get<double>() / 1e6) << "M parameters\n"
      << "  rollout: batch " << o.batch << ", horizon " << o.horizon << " segments (" << o.horizon * cfg.segment_len
      << " tokens per sequence), random byte tokens; AdamW step included\n"
      << "  machine: " << (cuda ? "CUDA device 0" : cpu_model()) << ", " << std::thread::hardware_concurrency()
      << " CPUs, LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH << ", "
      << base["threads"].get<int>() << " intra-op threads\n"
      << "  each strategy in a fresh process, " << o.rounds << " round(s) interleaved; per process 1 warm-up + "
      << o.rollouts << " timed rollouts; time = median, memory = largest peak\n";
  const char* mem_label = cuda ? "CUDA peak" : "peak RSS";
  // Speed from CPU time on the CPU (robust on a shared machine; one intra-op thread makes it
  // the compute time), from wall time on CUDA (kernels run asynchronously).
  const char* time_key = cuda ? "seconds" : "cpu_seconds";
  char line[256];
  std::snprintf(line, sizeof line, "%-11s %12s %7s %14s %7s %9s %9s %8s %12s\n", "strategy", mem_label, "xBPTT",
                "above start", "xBPTT", "wall s", "cpu s", "speed", "grad norm");
  out << line;
  auto peak_of = [&](const nlohmann::json& j) {
    return cuda ? j["device_peak"].get<int64_t>() : j["host_peak"].get<int64_t>();
  };
  auto step_of = [&](const nlohmann::json& j) {
    return cuda ? j["device_peak"].get<int64_t>() - j["device_baseline"].get<int64_t>()
                : j["host_peak"].get<int64_t>() - j["host_baseline"].get<int64_t>();
  };
  const double base_peak = static_cast<double>(peak_of(base));
  const double base_step = static_cast<double>(std::max<int64_t>(step_of(base), 1));
  const double base_t = bench::median(base[time_key].get<std::vector<double>>());
  double mrbp_mem = -1, mrbp_speed = -1;
  for (const auto& r : results) {
    const double peak = static_cast<double>(peak_of(r.j));
    const double step = static_cast<double>(step_of(r.j));
    const double wall = bench::median(r.j["seconds"].get<std::vector<double>>());
    const double cpu = bench::median(r.j["cpu_seconds"].get<std::vector<double>>());
    const double t = bench::median(r.j[time_key].get<std::vector<double>>());
    std::snprintf(line, sizeof line, "%-11s %8.1f MiB %6.2fx %10.1f MiB %6.2fx %9.2f %9.2f %7.2fx %12.6g\n",
                  r.name.c_str(), mib(static_cast<int64_t>(peak)), peak / base_peak, mib(static_cast<int64_t>(step)),
                  step / base_step, wall, cpu, base_t / t, r.j["grad_norm"].get<double>());
    out << line;
    if (r.name == "mrbp") {
      mrbp_mem = peak / base_peak;
      mrbp_speed = base_t / t;
    }
  }
  out << "  " << mem_label << ": the process's peak " << (cuda ? "allocated CUDA memory" : "resident memory")
      << " while training; above start: that peak minus the " << (cuda ? "allocation" : "resident size")
      << " before the first rollout; wall s / cpu s: median seconds per rollout (wall clock / CPU time of the "
         "process); speed: BPTT's " << (cuda ? "wall" : "CPU") << " time / this strategy's; grad norm: the first "
         "rollout's (equal strategies give equal gradients)\n";
  if (!base["host_peak_since_begin"].get<bool>() && !cuda)
    out << "  note: this kernel cannot reset the resident-memory peak; 'above start' counts from the process start\n";
  if (mrbp_mem >= 0 && results.front().name == "bptt") {
    const bool met = mrbp_mem <= 0.5 && mrbp_speed >= 0.85;
    out << "MRBP vs BPTT: memory x" << fmt("%.2f", mrbp_mem) << " (goal <= 0.5), speed x" << fmt("%.2f", mrbp_speed)
        << " (goal >= 0.85): " << (met ? "met" : "not met") << "\n";
  }
  return 0;
}

namespace {
class BenchTrainingStrategies : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_bench_strategies_command(&parent, o_); }
  int run(std::ostream& out) override { return run_bench_strategies(o_, out); }

 private:
  BenchStrategiesOptions o_;
};
}  // namespace

std::unique_ptr<Command> make_bench_training_strategies() { return std::make_unique<BenchTrainingStrategies>(); }

}  // namespace mnemo::app
