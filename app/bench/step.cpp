// `mnemoscope bench step`: ms per segment of the demo config with tracing off, writer-only and
// everything traced, interleaved passes, medians and ratios.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mnemo::app {

namespace {

struct BenchStepOptions {
  std::string config, doc;
  int64_t segments = 48;
  int64_t repeats = 7;
};



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
  MemoryModel model = make_model(cfg, 0);
  struct Mode {
    const char* name;
    TraceSpec spec;
    std::vector<double> ms;
  };
  std::vector<Mode> modes = {{"tracing off", TraceSpec::none(), {}},
                             {"writer attention only", TraceSpec::of({keys::kWriterAttn}), {}},
                             {"everything traced", TraceSpec::all(), {}}};
  const int64_t nseg = std::min<int64_t>(o.segments, Segmenter(&doc, cfg.segment_len).num_segments());
  out << "bench step: " << cfg_path << " (slots " << cfg.slots << ", L " << cfg.segment_len << ", d " << cfg.dim
      << ", heads " << cfg.heads << ", enc " << cfg.layers << " + dec " << cfg.dec_layers << " layers), doc "
      << doc_path << ", " << nseg << " segments x " << o.repeats << " passes per mode, " << torch::get_num_threads()
      << " threads\n";
  // Warm-up pass, then interleave the modes so drift affects all alike.
  for (int64_t r = -1; r < o.repeats; ++r) {
    for (auto& m : modes) {
      Engine e(model, doc, cfg.segment_len, m.spec);
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
  return 0;
}

class BenchStep : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("step", "ms per segment: tracing off vs writer-only vs everything");
    c->add_option("--config", o_.config, "model config (default sessions/demo-memformer.json)");
    c->add_option("--doc", o_.doc, "document (default assets/sample.txt)");
    c->add_option("--segments", o_.segments, "segments per pass");
    c->add_option("--repeats", o_.repeats, "passes per mode (median reported)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_step(o_, out); }

 private:
  BenchStepOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_step() { return std::make_unique<BenchStep>(); }

}  // namespace mnemo::app
