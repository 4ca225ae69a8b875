// `mnemoscope bench provenance`: what memory provenance costs per step (docs/models.md#provenance).
// The app's worker steps with the GUI's trace spec; with provenance on, the engine also hands
// each step's trace to the chain (a record from the writer attention or the RMT rollout, one
// chain update). Baseline and contender interleaved in one process, medians and the ratio.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/gui/model/worker.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/trace/provenance_trace.h"
#include "core/train/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mnemo::app {

namespace {

struct BenchProvenanceOptions {
  std::string config, checkpoint, doc;
  int64_t segments = 48;
  int64_t repeats = 7;
};

int run_bench_provenance(const BenchProvenanceOptions& o, std::ostream& out) {
  const std::string cfg_path = o.config.empty() && o.checkpoint.empty() ? find_session_config("demo-memformer.json") : o.config;
  const std::string doc_path = o.doc.empty() ? find_asset("sample.txt") : o.doc;
  ModelConfig cfg;
  Document doc;
  MemoryModel model;
  try {
    if (!o.checkpoint.empty()) {
      WeightsFile w = read_weights_file(o.checkpoint);
      cfg = ModelConfig::from_json(w.model_config);
      model = make_model(cfg, 0);
      load_weights_checked(*model, cfg, w, o.checkpoint);
    } else {
      cfg = ModelConfig::load(cfg_path);
      model = make_model(cfg, 0);
    }
    doc = load_document(doc_path);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (o.segments < 1 || o.repeats < 1) throw UsageError("--segments and --repeats must be >= 1");
  if (!has_provenance_chain(cfg.model))
    throw UsageError("bench provenance: " + cfg.model + " has no provenance chain (memformer, rmt, trxl-rmt have)");
  const int64_t nseg = std::min<int64_t>(o.segments, Segmenter(&doc, cfg.segment_len).num_segments());
  out << "bench provenance: " << (o.checkpoint.empty() ? cfg_path : o.checkpoint) << " (" << cfg.model << ", slots "
      << cfg.slots << ", L " << cfg.segment_len << ", d " << cfg.dim << ", heads " << cfg.heads << "), doc " << doc_path
      << ", " << nseg << " segments x " << o.repeats << " passes per mode, " << torch::get_num_threads() << " threads\n"
      << "  each step as the app's worker does it: the GUI's trace spec, one traced step per segment\n";
  // Three modes, their order rotated every pass: off, on, and an observer that only receives the
  // trace (so a difference of the whole step that the chain's own time does not explain shows up).
  std::vector<double> off, on, chain_only, empty;
  const TraceSpec spec = TraceSpec::of(gui_trace_keys());
  for (int64_t r = -1; r < o.repeats; ++r) {
    for (int k = 0; k < 3; ++k) {
      const int mode = static_cast<int>((k + std::max<int64_t>(r, 0)) % 3);
      Engine e(model, doc, cfg.segment_len, spec);
      if (mode == 2) e.set_step_observer(provenance_trace_keys(cfg.model), [](int64_t, const Trace&) {});
      ProvenanceChain chain(static_cast<int>(cfg.slots));
      double in_chain = 0.0;
      if (mode == 1) {
        e.set_step_observer(provenance_trace_keys(cfg.model), [&](int64_t i, const Trace& tr) {
          const auto t0 = std::chrono::steady_clock::now();
          const int64_t len = e.segmenter().segment_len(), first = i * len;
          auto p = provenance_step_from_trace(tr, cfg.model, i, first, std::min(len, e.document().size() - first), len);
          if (p) chain.record(std::move(*p));
          in_chain += bench::ms_since(t0);
        });
      }
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < nseg; ++i) {
        e.jump(i);
        if (mode == 1) {
          const auto t1 = std::chrono::steady_clock::now();
          if (!chain.at(i)) throw std::runtime_error("bench provenance: the chain lost a step");
          in_chain += bench::ms_since(t1);
        }
      }
      const double per_step = bench::ms_since(t0) / static_cast<double>(nseg);
      if (r < 0) continue;
      (mode == 0 ? off : mode == 1 ? on : empty).push_back(per_step);
      if (mode == 1) chain_only.push_back(in_chain / static_cast<double>(nseg));
    }
  }
  const double base = bench::median(off), with = bench::median(on), chain_ms = bench::median(chain_only),
               bare = bench::median(empty);
  char line[256];
  std::snprintf(line, sizeof line, "%-36s %10s %8s\n", "", "ms/step", "ratio");
  out << line;
  std::snprintf(line, sizeof line, "%-36s %10.3f %8.3f\n", "step, provenance off", base, 1.0);
  out << line;
  std::snprintf(line, sizeof line, "%-36s %10.3f %8.3f\n", "step, provenance on", with, with / base);
  out << line;
  std::snprintf(line, sizeof line, "%-36s %10.3f %8.3f\n", "  of which record + chain update", chain_ms, chain_ms / base);
  out << line;
  std::snprintf(line, sizeof line, "%-36s %10.3f %8.3f\n", "step, observer that does nothing", bare, bare / base);
  out << line;
  std::snprintf(line, sizeof line, "goal: provenance <= 5%% of the step's time: %s (chain %.2f%%, step difference %+.2f%%)\n",
                chain_ms / base <= 0.05 ? "met" : "NOT met", 100.0 * chain_ms / base, 100.0 * (with / base - 1.0));
  out << line;
  out << bench::machine_line() << "\n";
  return 0;
}

class BenchProvenance : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("provenance", "memory provenance's cost per step (chain on vs off)");
    c->add_option("--config", o_.config, "model config (default sessions/demo-memformer.json)");
    c->add_option("--checkpoint", o_.checkpoint, "a weights file instead (its own config), e.g. a zoo model");
    c->add_option("--doc", o_.doc, "document (default assets/sample.txt)");
    c->add_option("--segments", o_.segments, "segments per pass (default 48)");
    c->add_option("--repeats", o_.repeats, "passes per mode (median reported; default 7)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_provenance(o_, out); }

 private:
  BenchProvenanceOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_provenance() { return std::make_unique<BenchProvenance>(); }

}  // namespace mnemo::app
