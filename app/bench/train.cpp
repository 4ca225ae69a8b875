// `mnemoscope bench train`: training throughput (input tokens per second of optimizer steps)
// of each training config — by default the text language models of docs/experiments/
// text-memory.md — and, with --against-python, the same model trained by plain PyTorch eager
// in Python (app/bench/python/train_eager.py: the Python package's modules, the same initial
// weights, the same batches, AdamW with the same groups, schedule and clipping) in the same run,
// with the ratio and the per-step losses of both sides compared. --precision bf16 trains both
// sides under CPU autocast to bfloat16 (matmuls and linear layers in bfloat16 with float32
// accumulation, as LibTorch's and PyTorch's autocast lists say; weights, gradients and the
// optimizer in float32): the speed a CPU with bf16 arithmetic (AVX512-BF16, AMX) gains.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "core/io/safetensors.h"
#include "core/train/checkpoint.h"
#include "core/train/trainer.h"

#include <ATen/autocast_mode.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <unistd.h>

namespace mnemo::app {

namespace {

struct BenchTrainOptions {
  std::string configs;   // comma list; default the text configs
  int64_t steps = 8;     // timed steps per config (after the warm-up steps)
  int64_t warmup = 3;    // untimed first steps (both sides: the allocator's heap grows to a step's graph)
  bool against_python = false;
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch
  double tolerance = -1;    // relative difference allowed between the two sides' step losses (-1: by precision)
  std::string precision = "fp32";  // fp32 | bf16 (CPU autocast)
  bool child = false;       // internal: measure the one config given and print its row as JSON
  std::string device = "cpu";     // cpu | cuda: where both sides train
  std::vector<std::string> sets;  // --set key=value, applied to every config
};

const char* const kTextConfigs[] = {"text-memformer.json", "text-rmt.json", "text-rmt-hashed.json", "text-trxl.json",
                                    "text-transformer.json"};

constexpr double kFp32Tolerance = 2e-3, kBf16Tolerance = 3e-2;
double tolerance_of(const BenchTrainOptions& o) {
  return o.tolerance >= 0 ? o.tolerance : o.precision == "bf16" ? kBf16Tolerance : kFp32Tolerance;
}

// CPU autocast to bfloat16 on this thread while it lives (the trainer steps on the calling thread).
class CpuBf16Autocast {
 public:
  explicit CpuBf16Autocast(bool on) : on_(on) {
    if (on_) set(true);
  }
  ~CpuBf16Autocast() {
    if (!on_) return;
    set(false);
    at::autocast::clear_cache();
  }
  CpuBf16Autocast(const CpuBf16Autocast&) = delete;
  CpuBf16Autocast& operator=(const CpuBf16Autocast&) = delete;

 private:
  static void set(bool enabled) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(enabled);
#endif
  }
  bool on_;
};

struct Side {
  std::vector<double> losses, lrs, wall_ms, cpu_ms;  // per step (losses and lrs: every step, times: the timed ones)
  double tokens_per_step = 0;
  double tokens_per_s() const { return wall_ms.empty() ? 0 : tokens_per_step / (bench::median(wall_ms) / 1000.0); }
  double cpu_tokens_per_s() const { return cpu_ms.empty() ? 0 : tokens_per_step / (bench::median(cpu_ms) / 1000.0); }
};

// The Python side: the same initial weights and batches, trained by train_eager.py.
Side run_python(const BenchTrainOptions& o, const std::string& weights, const std::string& batches,
                const TrainingConfig& cfg, const Side& cpp) {
  const std::string script = find_asset("../app/bench/python/train_eager.py");
  nlohmann::json plan = {{"lrs", cpp.lrs},
                         {"weight_decay", cfg.train.weight_decay},
                         {"clip", cfg.train.clip},
                         {"warmup_steps", o.warmup},
                         {"threads", torch::get_num_threads()},
                         {"device", o.device},
                         {"precision", o.precision}};
  const bench::TempFile plan_file("mnemo-bench-train-plan-", ".json");
  {
    const std::string text = plan.dump();
    if (::write(plan_file.fd(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      throw std::runtime_error("bench train: cannot write " + plan_file.path());
  }
  int code = -1;
  const std::string out = bench::run_child({o.python, script, "--weights", weights, "--batches", batches, "--plan",
                                            plan_file.path()},
                                           "", /*merge_stderr=*/true, &code);
  if (code == 127) throw UsageError("bench train --against-python: cannot run " + o.python + "; name a python3 with PyTorch with --python");
  if (code == 77)
    throw UsageError("bench train --against-python: " + o.python + " has no PyTorch; install Debian's python3-torch "
                     "(bash .ci/setup does) or name another interpreter with --python");
  nlohmann::json j;
  try {
    if (code != 0) throw std::runtime_error("exit " + std::to_string(code));
    j = nlohmann::json::parse(bench::last_json_line(out));
  } catch (const std::exception& ex) {
    throw UsageError("bench train --against-python: " + o.python + " " + script + " failed (" + ex.what() + "): " +
                     out.substr(0, 2000));
  }
  Side py;
  py.losses = j.at("losses").get<std::vector<double>>();
  py.wall_ms = j.at("wall_ms").get<std::vector<double>>();
  py.cpu_ms = j.at("cpu_ms").get<std::vector<double>>();
  py.tokens_per_step = cpp.tokens_per_step;
  return py;
}

struct TrainRow {
  std::string name, skipped, strategy;
  Side cpp, py;
  double dloss = 0;
  bool has_py = false;
};

nlohmann::json side_json(const Side& s) {
  return {{"losses", s.losses}, {"lrs", s.lrs}, {"wall_ms", s.wall_ms}, {"cpu_ms", s.cpu_ms}, {"tokens_per_step", s.tokens_per_step}};
}
Side side_of(const nlohmann::json& j) {
  Side s;
  s.losses = j.at("losses").get<std::vector<double>>();
  s.lrs = j.at("lrs").get<std::vector<double>>();
  s.wall_ms = j.at("wall_ms").get<std::vector<double>>();
  s.cpu_ms = j.at("cpu_ms").get<std::vector<double>>();
  s.tokens_per_step = j.at("tokens_per_step").get<double>();
  return s;
}

// One config measured in this process: the C++ trainer's steps and, with --against-python,
// the Python side's on the same weights and batches.
TrainRow measure_config(const BenchTrainOptions& o, const std::string& path) {
  TrainingConfig cfg;
  try {
    cfg = load_training_config(path, o.sets);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  const torch::Device device = parse_device_flag(o.device);
  TrainRow row;
  const auto slash = path.find_last_of('/');
  row.name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::unique_ptr<Trainer> t;
  try {
    t = std::make_unique<Trainer>(cfg, device);
  } catch (const std::exception& e) {
    row.skipped = e.what();  // e.g. a text config without its corpus in the cache
    return row;
  }
  const bench::TempFile weights("mnemo-bench-train-", ".safetensors");
  const bench::TempFile batches("mnemo-bench-train-batches-", ".safetensors");
  if (o.against_python) save_model_weights(weights.path(), *t->model(), cfg.model);
  io::NamedTensors saved;
  const int64_t B = cfg.train.batch;
  row.cpp.tokens_per_step = static_cast<double>(B * t->task().length());
  const CpuBf16Autocast bf16(o.precision == "bf16");
  for (int64_t s = 0; s < o.warmup + o.steps; ++s) {
    if (o.against_python) {
      // The batch train_step is about to draw (a pure function of the example indices).
      std::vector<int64_t> idx(static_cast<size_t>(B));
      for (int64_t i = 0; i < B; ++i) idx[static_cast<size_t>(i)] = t->step() * B + i;
      const TaskBatch tb = t->task().batch(Split::kTrain, idx, torch::kCPU);
      for (size_t k = 0; k < tb.segments.size(); ++k)
        for (auto& t : named_segment_tensors(tb.segments[k], std::to_string(s) + "." + std::to_string(k) + "."))
          saved.push_back(std::move(t));
      if (tb.memory_frozen_from >= 0)
        throw UsageError("bench train --against-python: " + row.name + "'s task freezes the memory; the Python "
                         "reference trains tasks whose memory flows through every segment");
    }
    StepMetrics m;
    // On CUDA the step ends when its kernels have (the optimizer's run after the loss is read).
    const bench::Timing tm = bench::time_call([&] {
      m = t->train_step();
      if (device.is_cuda()) torch::cuda::synchronize();
    });
    row.cpp.losses.push_back(m.loss);
    row.cpp.lrs.push_back(m.lr);
    if (s >= o.warmup) {
      row.cpp.wall_ms.push_back(tm.wall_ms);
      row.cpp.cpu_ms.push_back(tm.cpu_ms);
    }
  }
  if (o.against_python) {
    // Gradient checkpointing and MRBP give full BPTT's gradients (core/train/rollout.h), at
    // their own cost: the C++ side trains as the config says; a truncated depth is another objective.
    if (cfg.train.bptt_depth != -1)
      throw UsageError("bench train --against-python: " + row.name + " truncates BPTT (train.bptt_depth " +
                       std::to_string(cfg.train.bptt_depth) + "); the Python reference trains with full BPTT (-1)");
    row.strategy = cfg.train.strategy;
    io::save_safetensors(batches.path(), saved, {{"steps", std::to_string(o.warmup + o.steps)}});
    row.py = run_python(o, weights.path(), batches.path(), cfg, row.cpp);
    row.has_py = true;
    if (row.py.losses.size() != row.cpp.losses.size())
      throw UsageError("bench train --against-python: the Python reference returned " +
                       std::to_string(row.py.losses.size()) + " losses, expected " + std::to_string(row.cpp.losses.size()));
    for (size_t i = 0; i < row.py.losses.size(); ++i)
      row.dloss = std::max(row.dloss, std::abs(row.py.losses[i] - row.cpp.losses[i]) / std::max(std::abs(row.cpp.losses[i]), 1e-12));
  }
  return row;
}

// The same in a fresh child process (this binary), as the Python side runs: a config measured
// after others in one process ran on a heap they had grown and fragmented (Transformer-XL
// measured 0.67x of its own speed alone there).
TrainRow measure_in_child(const BenchTrainOptions& o, const std::string& path) {
  std::vector<std::string> args = {bench::self_exe(), "--threads", std::to_string(torch::get_num_threads()), "bench",
                                   "train", "--child", "--configs", path, "--steps", std::to_string(o.steps), "--warmup",
                                   std::to_string(o.warmup),
                                   "--python", o.python, "--tolerance", bench::fmt("%.17g", o.tolerance),
                                   "--precision", o.precision};
  if (o.against_python) args.push_back("--against-python");
  args.push_back("--device");
  args.push_back(o.device);
  for (const auto& s : o.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  int code = -1;
  const std::string text = bench::run_child(args, "", /*merge_stderr=*/true, &code);
  nlohmann::json j;
  try {
    if (code != 0) throw std::runtime_error("exit " + std::to_string(code));
    j = nlohmann::json::parse(bench::last_json_line(text));
  } catch (const std::exception&) {
    // The child's own message (a usage error names the config and the problem).
    std::string msg = text;
    const std::string tag = "mnemoscope: error: ";
    if (const size_t at = msg.find(tag); at != std::string::npos) msg = msg.substr(at + tag.size());
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    if (code == 2) throw UsageError(msg);
    throw std::runtime_error("bench train: the child measuring " + path + " failed (exit " + std::to_string(code) +
                             "): " + msg.substr(0, 2000));
  }
  TrainRow r;
  r.name = j.at("name").get<std::string>();
  r.skipped = j.value("skipped", std::string());
  if (!r.skipped.empty()) return r;
  r.cpp = side_of(j.at("cpp"));
  r.has_py = j.at("has_py").get<bool>();
  if (r.has_py) {
    r.py = side_of(j.at("py"));
    r.dloss = j.at("dloss").get<double>();
    r.strategy = j.at("strategy").get<std::string>();
  }
  return r;
}

int run_bench_train(const BenchTrainOptions& o, std::ostream& out) {
  std::vector<std::string> paths = split_list(o.configs);
  if (paths.empty())
    for (const char* name : kTextConfigs) paths.push_back(find_session_config(name));
  if (o.steps < 1) throw UsageError("bench train: --steps must be at least 1");
  if (o.warmup < 0) throw UsageError("bench train: --warmup must be at least 0");
  if (o.precision != "fp32" && o.precision != "bf16")
    throw UsageError("bench train: --precision must be fp32 or bf16, not '" + o.precision + "'");
  if (o.precision == "bf16" && o.device != "cpu")
    throw UsageError("bench train --precision bf16: CPU autocast only (--device cpu); on a GPU, measure bf16 with "
                     "the CUDA build's own benches (docs/gpu.md)");
  parse_device_flag(o.device);  // before any child starts
  const double tolerance = tolerance_of(o);
  if (o.child) {
    if (paths.size() != 1) throw UsageError("bench train --child: give one config");
    const TrainRow r = measure_config(o, paths[0]);
    nlohmann::json j = {{"name", r.name}, {"skipped", r.skipped}, {"has_py", r.has_py}};
    if (r.skipped.empty()) j["cpp"] = side_json(r.cpp);
    if (r.has_py) {
      j["py"] = side_json(r.py);
      j["dloss"] = r.dloss;
      j["strategy"] = r.strategy;
    }
    out << j.dump() << "\n";
    return 0;
  }
  out << "bench train: input tokens per second of optimizer steps (" << o.warmup << " warm-up steps, then the median of " << o.steps
      << "), " << torch::get_num_threads() << " intra-op thread(s), device " << o.device
      << (o.device == "cuda" ? " (each step timed to its last kernel)" : "")
      << (o.precision == "bf16" ? ", bf16 autocast (matmuls in bfloat16; weights, gradients and AdamW in float32)" : ", fp32")
      << ", each config in a fresh process";
  for (const auto& s : o.sets) out << ", --set " << s;
  out << "\n"
      << "  " << bench::machine_line() << "\n";
  int code = 0;
  std::vector<TrainRow> rows;
  for (const auto& path : paths) {
    TrainRow row = paths.size() == 1 ? measure_config(o, path) : measure_in_child(o, path);
    if (!row.skipped.empty()) {
      out << "  " << row.name << ": skipped: " << row.skipped << "\n";
      continue;
    }
    if (row.has_py && !(row.dloss <= tolerance)) code = 1;
    rows.push_back(std::move(row));
  }
  char line[512];
  out << "\n";
  std::snprintf(line, sizeof line, "%-22s %14s %14s", "config", "C++ tok/s", "C++ CPU tok/s");
  out << line;
  if (o.against_python) {
    std::snprintf(line, sizeof line, " %14s %14s %9s %9s  %s", "Python tok/s", "Py CPU tok/s", "wall x", "CPU x",
                  "step losses agree (relative)");
    out << line;
  }
  out << "\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-22s %14.0f %14.0f", r.name.c_str(), r.cpp.tokens_per_s(), r.cpp.cpu_tokens_per_s());
    out << line;
    if (r.has_py) {
      std::snprintf(line, sizeof line, " %14.0f %14.0f %8.2fx %8.2fx  %zu within %.1e%s", r.py.tokens_per_s(),
                    r.py.cpu_tokens_per_s(), r.cpp.tokens_per_s() / r.py.tokens_per_s(),
                    r.cpp.cpu_tokens_per_s() / r.py.cpu_tokens_per_s(), r.py.losses.size(), r.dloss,
                    r.dloss <= tolerance ? "" : "  DISAGREE");
      out << line;
    }
    out << "\n";
  }
  for (const auto& r : rows)
    if (r.has_py && r.strategy != "bptt")
      out << "  " << r.name << ": the C++ side trains with strategy " << r.strategy
          << " (the config's; the same gradients as BPTT, recomputed: core/train/rollout.h), Python with plain BPTT\n";
  for (const auto& r : rows) {
    out << "  " << r.name << " step losses, C++:";
    for (double x : r.cpp.losses) out << " " << bench::fmt("%.6f", x);
    if (r.has_py) {
      out << "; Python:";
      for (double x : r.py.losses) out << " " << bench::fmt("%.6f", x);
    }
    out << "\n";
  }
  if (code != 0)
    out << "the Python reference and the C++ trainer disagree beyond " << tolerance
        << " (relative) on a step loss: one of them does not train docs/models.md's model as docs/training.md says\n";
  return code;
}

class BenchTrain : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("train", "training tokens/s of each text config (and, --against-python, of the same model in PyTorch eager)");
    c->add_option("--configs", o_.configs, "comma list of training configs (default the text configs: sessions/text-*.json)");
    c->add_option("--steps", o_.steps, "timed optimizer steps per config (median; after the warm-up steps)");
    c->add_option("--warmup", o_.warmup, "untimed optimizer steps first, on both sides");
    c->add_flag("--against-python", o_.against_python,
                "also train the same model from the same weights on the same batches with app/bench/python/train_eager.py "
                "(PyTorch eager): compares the step losses and prints the speed ratio");
    c->add_option("--python", o_.python, "interpreter for --against-python (default /usr/bin/python3, with python3-torch; a name without '/' is looked up in PATH)");
    c->add_option("--tolerance", o_.tolerance,
                  "largest relative step-loss difference accepted between the two sides (default 2e-3 in fp32, 3e-2 in bf16)");
    c->add_option("--precision", o_.precision,
                  "fp32 (default) or bf16: both sides train under CPU autocast to bfloat16 (matmuls in bf16; weights, "
                  "gradients and AdamW in fp32)");
    c->add_option("--device", o_.device, "cpu (default) or cuda: where both sides train (Python too, with --against-python)");
    c->add_option("--set", o_.sets, "override a field of every config: --set train.batch=64 (repeatable)");
    c->add_flag("--child", o_.child, "internal: measure one config in this process and print its row as JSON")->group("");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_train(o_, out); }

 private:
  BenchTrainOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_train() { return std::make_unique<BenchTrain>(); }

}  // namespace mnemo::app
