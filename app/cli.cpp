#include "app/cli.h"

#include "app/bench.h"
#include "app/bench_blas.h"
#include "app/bench_hashed.h"
#include "app/bench_strategies.h"
#include "app/cli_common.h"
#include "app/cmd_train.h"
#include "app/bench_recording.h"
#include "app/cmd_export.h"
#include "app/cmd_mtn_qa.h"
#include "app/cmd_plot.h"
#include "app/cmd_zoo.h"
#include "app/figures.h"
#include "app/figures_hash.h"
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/models/config.h"
#include "core/models/factory.h"
#include "core/platform/blas.h"
#include "kernels/device_info.h"
#include "viz/export.h"
#ifdef MNEMO_WITH_GUI
#include "app/gui/gui_cli.h"
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <climits>
#include <cstdlib>
#include <iostream>

namespace mnemo::app {

namespace {

struct StepOptions {
  std::string doc, out, format = "png,svg,csv";
  int64_t from = 0, to = -1;
  CLI::Option* o_to{};
};

int run_step(const ModelFlags& mf, const StepOptions& so, std::ostream& log) {
  // Validate everything before writing anything.
  Document doc = load_doc_flag(so.doc);
  ModelConfig cfg = mf.resolve();
  FigureFormats fm = parse_formats(so.format);
  check_out_dir(so.out);
  Segmenter seg(&doc, cfg.segment_len);
  const int64_t n = seg.num_segments();
  if (so.from < 0 || so.from >= n)
    throw UsageError("--from " + std::to_string(so.from) + " is out of range 0.." + std::to_string(n - 1) + " (the document has " +
                     std::to_string(n) + " segments of " + std::to_string(cfg.segment_len) + " tokens)");
  int64_t to = so.o_to && so.o_to->count() ? so.to : std::min(n - 1, so.from + 3);
  if (to < so.from || to >= n)
    throw UsageError("--to " + std::to_string(to) + " is out of range " + std::to_string(so.from) + ".." + std::to_string(n - 1));
  MemoryModel model = mf.build(cfg, log);
  if (doc.looks_binary()) log << "note: '" << so.doc << "' is not UTF-8 text; bytes are shown escaped\n";

  make_dirs(so.out);
  nlohmann::json manifest = {{"program", "mnemoscope"}, {"version", MNEMO_VERSION}, {"model", cfg.to_json()},
                             {"document", so.doc}, {"seed", mf.seed}, {"checkpoint", mf.checkpoint},
                             {"segments", n}, {"from", so.from}, {"to", to}};
  Engine engine(model, std::move(doc), cfg.segment_len, TraceSpec::all());
  log << "stepping segments " << so.from << ".." << to << " of " << n << " (" << cfg.segment_len << " tokens each)\n";
  HashStatsAccumulator hash_stats;  // bucket loads over the stepped segments ("linear": "hashed")
  for (int64_t i = so.from; i <= to; ++i) {
    SnapshotPtr snap = engine.jump(i);
    char name[32];
    std::snprintf(name, sizeof name, "/step-%04lld", static_cast<long long>(i));
    const std::string dir = so.out + name;
    make_dirs(dir);
    io::NamedTensors tensors(snap->trace.tensors.begin(), snap->trace.tensors.end());
    io::save_safetensors(dir + "/trace.safetensors", tensors,
                         {{"segment", std::to_string(i)}, {"model", cfg.to_json().dump()}});
    auto files = write_step_figures(*snap, engine.document(), dir, fm);
    hash_stats.add(snap->trace);
    log << "  segment " << i;
    if (!std::isnan(snap->loss)) log << "  loss(next segment) " << snap->loss;
    log << "  -> " << dir << " (" << files.size() + 1 << " files)\n";
    if (snap->non_finite) log << "  warning: NaN/Inf in '" << snap->non_finite_key << "' at segment " << i << "\n";
  }
  {
    const std::string text = manifest.dump(2) + "\n";
    io::write_file_atomic(so.out + "/manifest.json", text.data(), text.size());
  }
  if (fm.csv && write_hash_stats_csv(hash_stats, so.out + "/hash_stats.csv"))
    log << "hash table stats over segments " << so.from << ".." << to << " -> " << so.out << "/hash_stats.csv\n";
  log << "figures and traces are in " << so.out << "\n";
  return 0;
}

}  // namespace

std::string find_asset(const std::string& rel) {
  if (const char* env = std::getenv("MNEMO_ASSETS")) {
    std::string p = std::string(env) + "/" + rel;
    if (exists(p)) return p;
  }
  for (std::string base : {std::string("assets"), std::string(MNEMO_SOURCE_DIR) + "/assets"}) {
    std::string p = base + "/" + rel;
    if (exists(p)) {
      char buf[PATH_MAX];
      return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
    }
  }
  throw UsageError("asset '" + rel + "' not found; set MNEMO_ASSETS to the project's assets/ directory");
}

int run_cli(int argc, char** argv) {
  CLI::App app{"Mnemoscope: watch what memory-augmented transformers do with their memory"};
  app.require_subcommand(0, 1);
  // --threads anywhere on the line (subcommands pass it up): intra-op threads of LibTorch and
  // of OpenBLAS (core/platform/blas.h); default the number of cores.
  int threads = 0;
  app.fallthrough();
  app.add_option("--threads", threads, "CPU threads for LibTorch and OpenBLAS (default: number of cores)");

  auto* info = app.add_subcommand("info", "LibTorch version, CUDA, devices and threads");

  ModelFlags step_mf;
  StepOptions so;
  auto* step = app.add_subcommand("step", "step a model through a document and export traces and figures");
  step->add_option("--doc", so.doc, "document to step through (any file)")->required();
  step->add_option("--out", so.out, "output directory (created)")->required();
  step_mf.add_to(step);
  step->add_option("--from", so.from, "first segment (default 0)");
  so.o_to = step->add_option("--to", so.to, "last segment (default from+3)");
  step->add_option("--format", so.format, "figure formats: png,svg,csv");

  ModelFlags ew_mf;
  std::string ew_out;
  auto* ew = app.add_subcommand("export-weights", "write a model's weights as safetensors (module-path names)");
  ew_mf.add_to(ew);
  ew->add_option("--out", ew_out, "output .safetensors file")->required();

  BenchStepOptions bso;
  auto* bench = app.add_subcommand("bench", "benchmarks (contender and baseline in one run)");
  bench->require_subcommand(1);
  auto* bstep = bench->add_subcommand("step", "ms per segment: tracing off vs writer-only vs everything");
  bstep->add_option("--config", bso.config, "model config (default sessions/demo-memformer.json)");
  bstep->add_option("--doc", bso.doc, "document (default assets/sample.txt)");
  bstep->add_option("--segments", bso.segments, "segments per pass");
  bstep->add_option("--repeats", bso.repeats, "passes per mode (median reported)");
  BenchHashedOptions bho;
  auto* bhashed = add_bench_hashed_command(bench, bho);
  BenchStrategiesOptions bto;
  auto* bstrat = add_bench_strategies_command(bench, bto);
  BenchRecordingOptions bro;
  auto* brec = add_bench_recording_command(bench, bro);
  BenchBlasOptions bbo;
  auto* bblas = add_bench_blas_command(bench, bbo);

  TrainCommands trainc;
  add_train_commands(app, trainc);
  MtnQaCommand mtnqa;
  add_mtn_qa_command(app, mtnqa);
  ExportCommand exportc;
  add_export_command(app, exportc);
  PlotCommand plotc;
  add_plot_command(app, plotc);
  ZooCommand zooc;
  add_zoo_command(app, zooc);

  std::string demo_out = "mnemoscope-demo";
  auto* demo = app.add_subcommand("demo", "the demo on the shipped sample document");
  demo->add_option("--out", demo_out, "where the headless demo writes figures");
#ifdef MNEMO_WITH_GUI
  GuiCommands guic;
  add_gui_commands(app, bench, guic);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mnemoscope: error: " << e.what() << "\n" << "run 'mnemoscope --help' for usage\n";
    return 2;
  }

  try {
    if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + " must be >= 1 (0 = number of cores)");
    platform::set_compute_threads(threads > 0 ? threads : platform::cpu_cores());
    if (*info) {
      const platform::BlasInfo blas = platform::probe_blas();
      std::cout << "mnemoscope " << MNEMO_VERSION << "\n"
                << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH << "\n"
                << "LibTorch CUDA: " << (torch::cuda::is_available() ? "available" : "not available") << ", devices "
                << torch::cuda::device_count() << "\n"
                << "kernels: " << (kernels::built_with_cuda() ? "CUDA" : "CPU reference only (built without CUDA)")
                << ", CUDA runtime devices " << kernels::cuda_device_count() << "\n"
                << "CPU threads (intra-op): " << torch::get_num_threads() << " of " << platform::cpu_cores()
                << " cores (--threads N)\n"
                << "BLAS: " << blas.summary() << "\n"
#ifdef MNEMO_WITH_GUI
                << "GUI: built\n";
#else
                << "GUI: not built (MNEMO_GUI=OFF)\n";
#endif
      if (blas.is_reference())
        std::cout << "warning: the reference BLAS is slow (tens of times slower matrix products than OpenBLAS); "
                  << platform::reference_blas_fix() << "\n";
      return 0;
    }
    if (*step) return run_step(step_mf, so, std::cout);
    if (*ew) {
      ModelConfig cfg = ew_mf.resolve();
      if (is_dir(ew_out)) throw UsageError("--out '" + ew_out + "' is a directory; pass a file name ending in .safetensors");
      MemoryModel m = ew_mf.build(cfg, std::cout);
      io::NamedTensors w;
      for (auto& [k, t] : named_weights(*m)) w.emplace_back(k, t);
      try {
        io::save_safetensors(ew_out, w, {{"model", cfg.to_json().dump()}, {"seed", std::to_string(ew_mf.seed)}});
      } catch (const std::exception& e) {
        throw UsageError(std::string("--out: ") + e.what());
      }
      std::cout << "wrote " << w.size() << " tensors to " << ew_out << "\n";
      return 0;
    }
#ifdef MNEMO_WITH_GUI
    if (int rc = run_gui_commands(guic, std::cout); rc >= 0) return rc;
#endif
    if (int rc = run_train_commands(trainc, std::cout); rc >= 0) return rc;
    if (int rc = run_mtn_qa_command(mtnqa, std::cout); rc >= 0) return rc;
    if (int rc = run_export_command(exportc, std::cout); rc >= 0) return rc;
    if (int rc = run_plot_command(plotc, std::cout); rc >= 0) return rc;
    if (int rc = run_zoo_command(zooc, std::cout); rc >= 0) return rc;
    if (*bench) {
      if (*bstep) return run_bench_step(bso, std::cout);
      if (*bhashed) return run_bench_hashed(bho, std::cout);
      if (*bstrat) return run_bench_strategies(bto, std::cout);
      if (*brec) return run_bench_recording(bro, std::cout);
      if (*bblas) return run_bench_blas(bbo, std::cout);
    }
    if (*demo || argc == 1) {
      // With a display the demo is the desktop app; without one, the headless step.
      std::string no_display = "this build has no desktop app (MNEMO_GUI=OFF)";
#ifdef MNEMO_WITH_GUI
      if (int rc = run_demo_gui(std::cout, &no_display); rc >= 0) return rc;
#endif
      ModelFlags mf;
      CLI::App dummy;
      mf.add_to(&dummy);
      mf.config = find_asset("../sessions/demo-memformer.json");
      StepOptions dso;
      dso.doc = find_asset("sample.txt");
      dso.out = demo_out;
      std::cout << "demo: no window (" << no_display << "); running the headless step on " << dso.doc << " instead\n";
      int rc = run_step(mf, dso, std::cout);
      std::cout << "demo: open " << demo_out << "/step-0003/writer_attention_mean.png to see the writer attention\n";
      return rc;
    }
    std::cout << app.help();
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "mnemoscope: error: " << e.what() << "\n";
    return 2;
  } catch (const viz::ExportError& e) {
    std::cerr << "mnemoscope: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mnemoscope: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace mnemo::app
