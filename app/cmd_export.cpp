#include "app/cmd_export.h"

#include "app/cli.h"
#include "app/cli_common.h"
#include "app/figures.h"
#include "app/figures_session.h"
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


void parse_step_range(const std::string& s, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = std::numeric_limits<int64_t>::max();
  if (s.empty()) return;
  auto bad = [&]() {
    return UsageError("--steps '" + s + "': use A-B, A-, -B or A with non-negative step numbers and A <= B, e.g. --steps 100-500");
  };
  auto parse = [&](const std::string& t, int64_t* v) {
    if (t.empty()) return;
    size_t used = 0;
    try {
      *v = std::stoll(t, &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used != t.size() || *v < 0) throw bad();
  };
  const auto dash = s.find('-');
  if (dash == std::string::npos) {
    parse(s, lo);
    *hi = *lo;
    return;
  }
  if (s.find('-', dash + 1) != std::string::npos) throw bad();
  parse(s.substr(0, dash), lo);
  parse(s.substr(dash + 1), hi);
  if (*lo > *hi) throw bad();
}

void add_export_command(CLI::App& app, ExportCommand& c) {
  c.cmd = app.add_subcommand("export", "figures of a recorded training session (curves and probe maps), no model needed");
  c.cmd->add_option("--session", c.session, "session directory written by `mnemoscope train --out`")->required();
  c.cmd->add_option("--figure", c.figure, "all | maps | a curve name, or a comma list (see --help of the docs)");
  c.cmd->add_option("--steps", c.steps, "training steps A-B (A-, -B, A)");
  c.cmd->add_option("--format", c.format, "figure formats: png,svg,csv");
  c.cmd->add_option("--out", c.out, "output directory (default SESSION/export)");
}

int run_export_command(const ExportCommand& c, std::ostream& out) {
  if (!c.cmd || !*c.cmd) return -1;
  // Validate everything before writing anything.
  FigureFormats fm = parse_formats(c.format);
  int64_t lo = 0, hi = 0;
  parse_step_range(c.steps, &lo, &hi);
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
  RunLog log = parse_run_log(session->read_metrics(&read));
  if (!read.clean) out << "note: metrics.log stops at byte " << read.good_bytes << " of " << read.file_bytes << " ("
                         << read.stop_reason << "); exporting the records before it\n";
  const std::string dir = c.out.empty() ? c.session + "/export" : c.out;
  make_dirs(dir);

  int64_t files = 0;
  for (const auto& name : curves) {
    const auto written = write_session_curve(log, name, lo, hi, dir, fm);
    if (written.empty()) continue;  // this model / run has no such data
    files += static_cast<int64_t>(written.size());
    out << "  " << name << " -> " << dir << "/" << name << " (" << log.curves(name).size() << " series)\n";
  }
  if (maps) {
    int64_t recorded = 0;
    for (int64_t step : session->trace_steps()) {
      if (step < lo || step > hi) continue;
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
        files += static_cast<int64_t>(write_step_figures(*snap, probe.doc, sd, fm).size());
      }
      ++recorded;
    }
    out << "  maps of " << recorded << " recorded step(s) -> " << dir << "/maps\n";
  }
  out << "exported " << files << " files from " << c.session << " to " << dir << "\n";
  return 0;
}

}  // namespace mnemo::app
