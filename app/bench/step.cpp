// `mnemoscope bench step`: ms per segment of the demo config with tracing off, writer-only,
// everything traced and everything with the memory benefit (what the app steps), interleaved
// passes, medians and ratios. --against-python also steps the
// same weights through app/bench/python/step_eager.py (Memformer and RMT written from
// docs/models.md in plain PyTorch eager, run by Debian's python3-torch: the same LibTorch and
// BLAS), checks that it computes the same losses and memory, and prints the speed ratio.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"

#include <set>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {

struct BenchStepOptions {
  std::string config, doc;
  int64_t segments = 48;
  int64_t repeats = 7;
  bool against_python = false;
  bool python_inference_mode = false;  // the Python side under torch.inference_mode() instead of no_grad
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch
};

// Steps the model's weights through the Python eager reference; compares losses and the final
// memory with the C++ engine's; prints both speeds. Returns the exit code (1 when they disagree).
int against_python(const BenchStepOptions& o, const ModelConfig& cfg, const MemoryModel& model, const Document& doc,
                   const std::string& doc_path, int64_t nseg, std::ostream& out) {
  const std::string script = find_asset("../app/bench/python/step_eager.py");
  const bench::TempFile weights("mnemo-bench-step-", ".safetensors");  // removed on every exit
  save_model_weights(weights.path(), *model, cfg);

  // The C++ engine over the same segments, tracing off, timed as the Python side times
  // itself (wall and CPU, a warm-up pass, then the median pass); the warm-up pass also
  // gives the losses and the memory the two are compared by.
  std::vector<double> losses, wall, cpu;
  torch::Tensor mem;
  for (int64_t r = -1; r < o.repeats; ++r) {
    Engine pass(model, doc, cfg.segment_len, TraceSpec::none());
    const bench::Timing t = bench::time_call([&] {
      for (int64_t i = 0; i < nseg; ++i) {
        const SnapshotPtr s = pass.jump(i);
        if (r < 0) losses.push_back(s->loss);
      }
    });
    if (r < 0)
      mem = pass.memory_before(nseg).tensors.at(model->capabilities().memory_state).reshape({-1}).to(torch::kFloat64);
    else {
      wall.push_back(t.wall_ms / static_cast<double>(nseg));
      cpu.push_back(t.cpu_ms / static_cast<double>(nseg));
    }
  }
  const double cpp_ms = bench::median(wall), cpp_cpu = bench::median(cpu);

  int code = -1;
  std::vector<std::string> args = {o.python,   script, "--weights", weights.path(), "--doc", doc_path, "--segments",
                                   std::to_string(nseg), "--repeats", std::to_string(o.repeats), "--threads",
                                   std::to_string(torch::get_num_threads())};
  if (o.python_inference_mode) args.push_back("--inference-mode");
  const std::string text = bench::run_child(args, "", /*merge_stderr=*/true, &code);
  if (code == 127)
    throw UsageError("bench step --against-python: cannot run " + o.python + "; name a python3 with PyTorch with --python");
  if (code == 77)
    throw UsageError("bench step --against-python: " + o.python + " has no PyTorch; install Debian's python3-torch "
                     "(bash .ci/setup does) or name another interpreter with --python");
  const std::string last = bench::last_json_line(text);
  nlohmann::json j;
  try {
    if (code != 0) throw std::runtime_error("exit " + std::to_string(code));
    j = nlohmann::json::parse(last);
  } catch (const std::exception& ex) {
    throw UsageError("bench step --against-python: " + o.python + " " + script + " failed (" + ex.what() + "): " +
                     text.substr(0, 2000));
  }
  // Same model? Per-segment losses (relative) and the memory after the last segment.
  double dloss = 0, dmem = 0;
  std::vector<double> pl;
  for (const auto& x : j.at("losses")) pl.push_back(x.is_null() ? std::nan("") : x.get<double>());
  const auto pm = j.at("memory").get<std::vector<double>>();
  if (pl.size() != losses.size() || static_cast<int64_t>(pm.size()) != mem.numel())
    throw UsageError("bench step --against-python: the Python reference returned " + std::to_string(pl.size()) +
                     " losses and " + std::to_string(pm.size()) + " memory values, expected " +
                     std::to_string(losses.size()) + " and " + std::to_string(mem.numel()));
  for (size_t i = 0; i < pl.size(); ++i) {
    if (std::isfinite(losses[i]) != std::isfinite(pl[i])) dloss = INFINITY;  // one has a loss, the other not
    else if (std::isfinite(losses[i]))
      dloss = std::max(dloss, std::abs(pl[i] - losses[i]) / std::max(std::abs(losses[i]), 1e-12));
  }
  const double* mp = mem.data_ptr<double>();
  for (size_t i = 0; i < pm.size(); ++i) dmem = std::max(dmem, std::abs(pm[i] - mp[i]));
  const double py_ms = j.at("ms_per_segment").get<double>(), py_cpu = j.at("cpu_ms_per_segment").get<double>();
  char line[768];
  std::snprintf(line, sizeof line,
                "\nagainst Python eager (%s, torch %s, %d threads, Python under %s, C++ under InferenceMode, tracing "
                "off on both sides):\n"
                "  wall: Python %.3f ms/segment, C++ %.3f: C++ is %.2fx as fast\n"
                "  CPU:  Python %.3f ms/segment, C++ %.3f: C++ is %.2fx as fast (goal >= 2x: %s)\n"
                "  same model: %zu segment losses agree within %.1e (relative), the memory after segment %lld within %.1e\n",
                o.python.c_str(), j.value("torch", std::string("?")).c_str(), j.value("threads", 0),
                j.value("mode", std::string("?")).c_str(), py_ms, cpp_ms,
                py_ms / cpp_ms, py_cpu, cpp_cpu, py_cpu / cpp_cpu, py_cpu / cpp_cpu >= 2.0 ? "met" : "not met", pl.size(),
                dloss, static_cast<long long>(nseg - 1), dmem);
  out << line;
  if (!(dloss <= 1e-4 && dmem <= 1e-4)) {
    out << "the Python reference and the C++ model disagree (tolerance 1e-4): one of them is not docs/models.md's "
           "Memformer\n";
    return 1;
  }
  return 0;
}



int run_bench_step(const BenchStepOptions& o, std::ostream& out) {
  const std::string cfg_path = o.config.empty() ? find_session_config("demo-memformer.json") : o.config;
  const std::string doc_path = o.doc.empty() ? find_asset("sample.txt") : o.doc;
  ModelConfig cfg;
  Document doc;
  try {
    cfg = ModelConfig::load(cfg_path);
    doc = load_document(doc_path);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (o.segments < 1 || o.repeats < 1) throw UsageError("--segments and --repeats must be >= 1");
  // The kinds the Python reference (app/bench/python/step_eager.py) implements.
  static const std::set<std::string> kPythonReference = {"memformer", "rmt"};
  if (o.against_python && (!kPythonReference.count(cfg.model) || cfg.linear != "dense"))
    throw UsageError("--against-python: the Python reference has Memformer and RMT with dense projections; " +
                     cfg_path + " is '" + cfg.model + "' with linear '" + cfg.linear + "'");
  MemoryModel model = make_model(cfg, 0);
  struct Mode {
    const char* name;
    TraceSpec spec;
    std::vector<double> ms;
    bool benefit = false;  // Engine::set_memory_benefit: the app's memory benefit view
  };
  std::vector<Mode> modes = {{"tracing off", TraceSpec::none(), {}},
                             {"writer attention only", TraceSpec::of({keys::kWriterAttn}), {}},
                             {"everything traced", TraceSpec::all(), {}},
                             {"everything + benefit", TraceSpec::all(), {}, true}};
  const int64_t nseg = std::min<int64_t>(o.segments, Segmenter(&doc, cfg.segment_len).num_segments());
  out << "bench step: " << cfg_path << " (slots " << cfg.slots << ", L " << cfg.segment_len << ", d " << cfg.dim
      << ", heads " << cfg.heads << ", enc " << cfg.layers << " + dec " << cfg.dec_layers << " layers), doc "
      << doc_path << ", " << nseg << " segments x " << o.repeats << " passes per mode, " << torch::get_num_threads()
      << " threads\n";
  // Warm-up pass, then interleave the modes so drift affects all alike.
  for (int64_t r = -1; r < o.repeats; ++r) {
    for (auto& m : modes) {
      Engine e(model, doc, cfg.segment_len, m.spec);
      e.set_memory_benefit(m.benefit);
      auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < nseg; ++i) e.jump(i);
      auto t1 = std::chrono::steady_clock::now();
      if (r >= 0) m.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / static_cast<double>(nseg));
    }
  }
  const double base = bench::median(modes[0].ms);
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %14s %10s\n", "mode", "ms/segment", "vs off");
  out << line;
  for (auto& m : modes) {
    const double v = bench::median(m.ms);
    std::snprintf(line, sizeof line, "%-24s %14.3f %9.3fx\n", m.name, v, v / base);
    out << line;
  }
  const double writer_overhead = bench::median(modes[1].ms) / base - 1.0;
  std::snprintf(line, sizeof line, "writer-only tracing overhead: %+.1f%% (goal <= 10%%)\n", 100.0 * writer_overhead);
  out << line;
  const double everything = bench::median(modes[2].ms), benefit = bench::median(modes[3].ms);
  std::snprintf(line, sizeof line,
                "memory benefit (the segment again from the initial and from a zeroed memory): %+.3f ms/segment, "
                "%+.1f%% over everything traced\n",
                benefit - everything, 100.0 * (benefit / everything - 1.0));
  out << line;
  if (o.against_python) return against_python(o, cfg, model, doc, doc_path, nseg, out);
  return 0;
}

class BenchStep : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("step", "ms per segment: tracing off vs writer-only vs everything vs everything + memory benefit");
    c->add_option("--config", o_.config, "model config (default sessions/demo-memformer.json)");
    c->add_option("--doc", o_.doc, "document (default assets/sample.txt)");
    c->add_option("--segments", o_.segments, "segments per pass");
    c->add_option("--repeats", o_.repeats, "passes per mode (median reported)");
    c->add_flag("--against-python", o_.against_python,
                "also run app/bench/python/step_eager.py (Memformer or RMT in PyTorch eager) on the same weights: "
                "checks it computes the same and prints the speed ratio");
    c->add_flag("--python-inference-mode", o_.python_inference_mode,
                "run the Python side under torch.inference_mode() (default torch.no_grad(), the common idiom)");
    c->add_option("--python", o_.python, "interpreter for --against-python (default /usr/bin/python3, with python3-torch)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_step(o_, out); }

 private:
  BenchStepOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_step() { return std::make_unique<BenchStep>(); }

}  // namespace mnemo::app
