// `mnemoscope export`: figures of a recorded training session in batch (docs/training.md#export, docs/formats.md#sessions).
//
//   export --session DIR [--figure NAME[,NAME...]] [--step-range A-B] [--format svg,png,csv] [--out OUT]
//     NAME: a curve of the metrics log (core/train/run_log.h curve_names(): loss, perplexity,
//     accuracy, lr, grad-norm, tokens-per-s, peak-memory, probe-loss, slot-types,
//     forget-norm, block-mass, hash-entropy), `maps` (every figure of every probe segment of
//     each recorded step in A-B, as `mnemoscope step` writes them), or `all` (default).
//     --step-range limits curves and maps to training steps A..B (either side may be left out:
//     "100-", "-500"; the old name --steps is accepted with a deprecation note). OUT defaults to
//     DIR/export. Nothing is recomputed: no model is built.
#include "app/view/publisher.h"
#include "app/commands/commands.h"

#include "app/cli/owned_dir.h"
#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "app/figures/figures.h"
#include "app/figures/run_curves.h"
#include "core/io/atomic_file.h"
#include "core/io/session.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "viz/export.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

namespace mnemo::app {

struct ExportCommand {
  CLI::App* cmd = nullptr;
  std::string session, figure = "all", steps, old_steps, format = "png,svg,csv", out;
  CLI::Option* o_old_steps = nullptr;
};



static CLI::App* add_export_command(CLI::App& app, ExportCommand& c) {
  c.cmd = app.add_subcommand("export", "figures of a recorded training session (curves and probe maps), no model needed");
  c.cmd->add_option("--session", c.session, "session directory written by `mnemoscope train --out`")->required();
  std::string names;
  for (const auto& n : RunLog::curve_names()) names += (names.empty() ? "" : ", ") + n;
  c.cmd->add_option("--figure", c.figure,
                    "all (default), maps (every probe map), or curves, comma-separated: " + names);
  c.cmd->add_option("--step-range", c.steps, "training steps A-B (A-, -B, A) of the curves and maps");
  c.o_old_steps = c.cmd->add_option("--steps", c.old_steps, "old name of --step-range (deprecated)");
  c.cmd->add_option("--format", c.format, "figure formats: png,svg,csv");
  c.cmd->add_option("--out", c.out, "output directory (default SESSION/export)");
  return c.cmd;
}

static int run_export_command(const ExportCommand& c, std::ostream& out) {
  // Validate everything before writing anything.
  FigureFormats fm = parse_formats(c.format);
  int64_t lo = 0, hi = 0;
  const bool old_steps = c.o_old_steps && c.o_old_steps->count();
  if (old_steps && !c.steps.empty()) throw UsageError("--steps is the old name of --step-range; give only --step-range");
  parse_step_range(old_steps ? c.old_steps : c.steps, &lo, &hi, old_steps ? "--steps" : "--step-range");
  if (old_steps)
    out << "note: export --steps is deprecated and will be removed in the next release; use --step-range " << c.old_steps
        << " (training steps; --steps means optimizer steps in train)\n";
  std::vector<std::string> curves;
  bool maps = false;
  {
    std::stringstream ss(c.figure);
    for (std::string name; std::getline(ss, name, ',');) {
      if (name == "all") {
        curves = RunLog::curve_names();
        maps = true;
      } else if (name == "maps") {
        maps = true;
      } else {
        const auto& known = RunLog::curve_names();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          std::string list;
          for (const auto& n : known) list += n + ", ";
          throw UsageError("--figure '" + name + "' is not a figure; use all, maps, or one of: " + list.substr(0, list.size() - 2));
        }
        if (std::find(curves.begin(), curves.end(), name) == curves.end()) curves.push_back(name);
      }
    }
    if (curves.empty() && !maps) throw UsageError("--figure is empty; use all, maps or a curve name");
  }
  std::optional<io::Session> session;
  try {
    session = io::Session::open(c.session, 3, io::SessionAccess::kReadOnly);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--session: ") + e.what());
  }
  io::LogReadResult read;
  const auto records = session->read_metrics(&read);
  RunLog log = parse_run_log(records, read);
  for (const auto& g : log.gaps) out << "note: " << describe_gap(g) << "; the records after it were read\n";
  if (!read.stop_reason.empty())
    out << "note: metrics.log stops at byte " << read.good_bytes << " of " << read.file_bytes << " (" << read.stop_reason
        << "); exporting the records before it\n";
  const std::string dir = c.out.empty() ? c.session + "/export" : c.out;
  // What would be written, decided before anything is: a range or figure with no data is an
  // error (exit 2) and leaves no folder behind.
  std::vector<std::string> plotted;
  for (const auto& name : curves)
    if (!run_curve_spec(log, name, lo, hi).series.empty()) plotted.push_back(name);
  std::vector<int64_t> map_steps;
  if (maps)
    for (int64_t step : session->trace_steps())
      if (step >= lo && step <= hi) map_steps.push_back(step);
  if (plotted.empty() && map_steps.empty()) {
    std::string have = log.last_step() >= 0 ? "its records reach step " + std::to_string(log.last_step()) : "it has no records";
    const auto traces = session->trace_steps();
    have += traces.empty() ? ", no recordings" : ", recordings at steps " + std::to_string(traces.front()) + ".." +
                                                     std::to_string(traces.back());
    const std::string what = c.figure == "all" ? "" : " for --figure " + c.figure;
    if (!c.steps.empty() || old_steps)
      throw UsageError((old_steps ? "--steps " + c.old_steps : "--step-range " + c.steps) +
                       ": nothing to export in that range" + what + " (" + have +
                       "); nothing was written");
    throw UsageError("--figure " + c.figure + ": the session has nothing to export (" + have + "); nothing was written");
  }
  const std::string dir_flag = c.out.empty() ? "--session (its export folder)" : "--out";
  try {
    io::check_output_dir(dir, dir_flag);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  // What this run writes, by name: none of it may be a file of the user's (a loss.csv of
  // their own in --out); what an earlier export wrote there is listed in its manifest.json.
  const auto finals = log.final_results();
  const bool with_finals = !curves.empty() && !finals.empty() && finals.front().step >= lo && finals.front().step <= hi;
  std::vector<std::string> planned;
  for (const auto& name : plotted)
    for (const char* ext : {".png", ".svg", ".csv"})
      if ((ext[1] == 'p' && fm.png) || (ext[1] == 's' && fm.svg) || (ext[1] == 'c' && fm.csv)) planned.push_back(name + ext);
  if (with_finals && fm.csv) planned.push_back("final_evaluation.csv");
  if (maps && !map_steps.empty()) planned.push_back("maps/");
  make_out_dir(dir, dir_flag);
  const auto lock = lock_owned_dir(dir, dir_flag, "export");
  refuse_overwriting(dir, planned, dir_flag);
  OwnedDirManifest manifest(dir, {{"command", "export"}, {"session", c.session}});
  manifest.keep_listed();
  // Listed before they are written: a kill half-way leaves no file the next export calls foreign.
  for (const auto& p : planned)
    if (p.back() == '/') manifest.begin_folder(p.substr(0, p.size() - 1));
    else manifest.add(p);
  manifest.save(false);

  int64_t files = 0;
  for (const auto& name : plotted) {
    const auto written = write_run_curve(log, name, lo, hi, dir, fm);
    for (const auto& w : written) manifest.add_written(w);
    files += static_cast<int64_t>(written.size());
    out << "  " << name << " -> " << dir << "/" << name << " (" << log.curves(name).size() << " series)\n";
  }
  if (with_finals) {
    const auto written = write_final_evaluations(log, dir, fm);
    for (const auto& w : written) manifest.add_written(w);
    files += static_cast<int64_t>(written.size());
    if (!written.empty())
      out << "  final evaluation (" << finals.size() << " rows) -> " << dir << "/final_evaluation.csv\n";
  }
  if (maps) {
    const std::string model_kind = session->model_kind();  // labels and which tokens lm.loss predicts
    int64_t recorded = 0;
    for (int64_t step : map_steps) {
      const std::string path = session->trace_path(step);
      std::map<std::string, std::string> meta;
      ReplayedProbe probe;
      try {
        probe = read_recording(io::load_safetensors(path, &meta), meta, path);
      } catch (const std::exception& e) {
        out << "warning: skipped " << path << ": " << e.what() << "\n";
        continue;
      }
      char name[48];
      std::snprintf(name, sizeof name, "/maps/step-%09lld", static_cast<long long>(step));
      for (const auto& snap : probe.segments) {
        char seg[32];
        std::snprintf(seg, sizeof seg, "/segment-%04lld", static_cast<long long>(snap->segment));
        const std::string sd = dir + name + seg;
        make_dirs(sd);
        StepData st = *publish_step(*snap, probe.doc, model_kind).step;
        st.train_step = step;  // the titles name the training step of the probe recording
        const auto written = write_step_figures(st, probe.doc, sd, fm);
        for (const auto& w : written) manifest.add_written(w);
        files += static_cast<int64_t>(written.size());
      }
      ++recorded;
    }
    out << "  maps of " << recorded << " recorded step(s) -> " << dir << "/maps\n";
  }
  if (maps && !map_steps.empty()) manifest.end_folder("maps");
  manifest.save(true);  // lists every file written, so the next export may replace them
  out << "exported " << files << " files from " << c.session << " to " << dir << "\n";
  return 0;
}

namespace {
class ExportCmd : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_export_command(parent, c_); }
  int run(std::ostream& out) override { return run_export_command(c_, out); }

 private:
  ExportCommand c_;
};
}  // namespace

std::unique_ptr<Command> make_export_command() { return std::make_unique<ExportCmd>(); }

}  // namespace mnemo::app
