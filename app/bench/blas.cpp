// `mnemoscope bench blas`: the BLAS this process loaded against the reference Netlib BLAS,
// in one run. The program re-executes itself twice (hidden --child): once as it is, once
// with LD_LIBRARY_PATH = --reference-dir so that the dynamic linker finds the reference
// libblas.so.3 first; each child names the BLAS it actually loaded (core/platform/blas.h
// probe) and measures
//   * the `bench step` workload: the demo Memformer stepping the sample document, tracing
//     off, ms per segment (median of passes);
//   * one training step of each --configs training config (sessions/*.json): wall and CPU
//     ms per optimizer step, median over --steps steps after one warm-up step;
// and the parent prints both columns and the ratio. --with "ARGS" also runs
// `mnemoscope bench ARGS` (e.g. "training-strategies --rounds 1") under each BLAS and
// prints its output. Children run with --child-threads (default 1).
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/cli/flags.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/platform/blas.h"
#include "core/train/trainer.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace mnemo::app {

namespace {

struct BenchBlasOptions {
  std::string configs;   // comma list of training configs
  int64_t steps = 5;     // timed training steps per config (after one warm-up)
  int64_t segments = 48, repeats = 3;  // the bench step workload
  int64_t threads = 1;
  std::string reference_dir = "/usr/lib/x86_64-linux-gnu/blas";
  std::vector<std::string> with;  // extra bench command lines run under both BLAS
  bool child = false;             // hidden
};

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string w; ss >> w;) out.push_back(w);
  return out;
}



int run_child(const BenchBlasOptions& o, std::ostream& out) {
  const platform::BlasInfo blas = platform::probe_blas();
  nlohmann::json j = {{"blas", blas.summary()},
                      {"reference", blas.is_reference()},
                      {"path", blas.real_path},
                      {"threads", torch::get_num_threads()}};
  // The `bench step` workload, tracing off.
  {
    const ModelConfig cfg = ModelConfig::load(find_session_config("demo-memformer.json"));
    Document doc = load_document(find_asset("sample.txt"));
    MemoryModel model = make_model(cfg, 0);
    const int64_t nseg = std::min<int64_t>(o.segments, Segmenter(&doc, cfg.segment_len).num_segments());
    std::vector<double> ms;
    for (int64_t r = -1; r < o.repeats; ++r) {
      Engine e(model, doc, cfg.segment_len, TraceSpec::none());
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < nseg; ++i) e.jump(i);
      const double v = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0) ms.push_back(v / static_cast<double>(nseg));
    }
    j["step_ms_per_segment"] = bench::median(ms);
  }
  nlohmann::json configs = nlohmann::json::array();
  for (const auto& path : split_list(o.configs)) {
    TrainingConfig cfg = TrainingConfig::load(path);
    Trainer t(cfg);
    t.train_step();  // warm-up
    std::vector<double> wall, cpu;
    for (int64_t s = 0; s < o.steps; ++s) {
      const double c0 = bench::process_cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      t.train_step();
      wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      cpu.push_back(bench::process_cpu_ms() - c0);
    }
    configs.push_back({{"config", path}, {"train_ms", bench::median(wall)}, {"train_cpu_ms", bench::median(cpu)}});
  }
  j["configs"] = configs;
  out << j.dump() << "\n";
  return 0;
}

using bench::fmt;

int run_bench_blas(const BenchBlasOptions& o, std::ostream& out);

class BenchBlas : public Command {
 public:
  CLI::App* add(CLI::App& bench) override {
  auto& o = o_;
  auto* c = bench.add_subcommand("blas", "the loaded BLAS vs the reference BLAS: bench step and training steps");
  c->add_option("--configs", o.configs, "comma list of training configs to time one training step of");
  c->add_option("--steps", o.steps, "timed training steps per config (median; after one warm-up)");
  c->add_option("--segments", o.segments, "bench step workload: segments per pass");
  c->add_option("--repeats", o.repeats, "bench step workload: passes (median)");
  c->add_option("--child-threads", o.threads, "intra-op threads in the children (default 1)");
  c->add_option("--reference-dir", o.reference_dir, "directory holding the reference libblas.so.3");
  c->add_option("--with", o.with, "also run `mnemoscope bench ARGS` under both BLAS (repeatable)");
  c->add_flag("--child", o.child, "internal")->group("");
  return c;
  }
  int run(std::ostream& out) override { return run_bench_blas(o_, out); }

 private:
  BenchBlasOptions o_;
};

int run_bench_blas(const BenchBlasOptions& o, std::ostream& out) {
  if (o.steps < 1 || o.segments < 1 || o.repeats < 1 || o.threads < 1)
    throw UsageError("--steps, --segments, --repeats and --child-threads must be >= 1");
  for (const auto& p : split_list(o.configs)) {
    try {
      TrainingConfig::load(p);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--configs: ") + e.what());
    }
  }
  if (o.child) return run_child(o, out);
  if (::access((o.reference_dir + "/libblas.so.3").c_str(), R_OK) != 0)
    throw UsageError("--reference-dir: no libblas.so.3 in '" + o.reference_dir +
                     "' (Debian package libblas3 installs the reference BLAS there)");
  const std::string exe = bench::self_exe();
  struct Variant {
    const char* label;
    std::string lib_dir;
    nlohmann::json result;
  };
  std::vector<Variant> vs = {{"as loaded", "", nullptr}, {"reference", o.reference_dir, nullptr}};
  for (auto& v : vs) {
    std::vector<std::string> args = {exe,         "--threads", std::to_string(o.threads), "bench", "blas", "--child",
                                     "--steps",   std::to_string(o.steps), "--segments", std::to_string(o.segments),
                                     "--repeats", std::to_string(o.repeats)};
    if (!o.configs.empty()) {
      args.push_back("--configs");
      args.push_back(o.configs);
    }
    int code = 0;
    const std::string text = bench::run_child(args, v.lib_dir, false, &code);
    // The child's result is its last line, one JSON object (nested objects inside it too).
    size_t brace = text.rfind("\n{");
    brace = brace == std::string::npos ? (text.rfind('{', 0) == 0 ? 0 : std::string::npos) : brace + 1;
    if (code != 0 || brace == std::string::npos)
      throw std::runtime_error(std::string("the ") + v.label + " child failed (exit " + std::to_string(code) + "): " + text);
    try {
      v.result = nlohmann::json::parse(text.substr(brace));
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(std::string("the ") + v.label + " child's result is not JSON (" + e.what() + "): " + text);
    }
  }
  out << "bench blas: " << o.threads << " intra-op thread(s) per child\n";
  for (const auto& v : vs) out << "  " << v.label << ": " << v.result["blas"].get<std::string>() << "\n";
  if (vs[0].result["path"] == vs[1].result["path"])
    out << "  warning: both children loaded the same BLAS; the ratios below compare it with itself\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %14s %14s %9s\n", "workload", "loaded (ms)", "reference (ms)", "ref/loaded");
  out << line;
  auto row = [&](const std::string& name, double a, double b) {
    std::snprintf(line, sizeof line, "%-44s %14s %14s %8.1fx\n", name.c_str(), fmt("%.2f", a).c_str(),
                  fmt("%.2f", b).c_str(), b / a);
    out << line;
  };
  row("bench step (demo memformer, ms/segment)", vs[0].result["step_ms_per_segment"].get<double>(),
      vs[1].result["step_ms_per_segment"].get<double>());
  const auto& ca = vs[0].result["configs"];
  const auto& cb = vs[1].result["configs"];
  for (size_t i = 0; i < ca.size() && i < cb.size(); ++i) {
    std::string name = ca[i]["config"].get<std::string>();
    const auto slash = name.find_last_of('/');
    if (slash != std::string::npos) name = name.substr(slash + 1);
    row("train step " + name + " wall", ca[i]["train_ms"].get<double>(), cb[i]["train_ms"].get<double>());
    row("train step " + name + " CPU", ca[i]["train_cpu_ms"].get<double>(), cb[i]["train_cpu_ms"].get<double>());
  }
  for (const auto& w : o.with) {
    for (const auto& v : vs) {
      std::vector<std::string> args = {exe, "--threads", std::to_string(o.threads), "bench"};
      for (const auto& a : split_words(w)) args.push_back(a);
      int code = 0;
      const std::string text = bench::run_child(args, v.lib_dir, true, &code);
      out << "\n== bench " << w << " with the " << v.label << " BLAS (" << v.result["blas"].get<std::string>()
          << "), exit " << code << "\n"
          << text;
    }
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> make_bench_blas() { return std::make_unique<BenchBlas>(); }

}  // namespace mnemo::app
