#include "app/cmd_export.h"

#include "app/cli.h"
#include "app/cli_common.h"
#include "app/figures.h"
#include "core/io/session.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "viz/export.h"
#include "viz/series.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

namespace mnemo::app {

namespace {

constexpr int kCurveColumns = 1500;  // at most two drawn points per column (min/max)

const std::vector<viz::Rgb>& palette() {
  static const std::vector<viz::Rgb> p = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                          {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                          {188, 189, 34},  {23, 190, 207}};
  return p;
}

struct CurveInfo {
  const char* title;
  const char* y_label;
  bool log_y;
};

CurveInfo curve_info(const std::string& name) {
  if (name == "loss") return {"Loss (train steps, valid evaluations)", "loss (nats/token)", false};
  if (name == "perplexity") return {"Perplexity", "perplexity", true};
  if (name == "accuracy") return {"Per-character accuracy", "accuracy", false};
  if (name == "lr") return {"Learning rate", "learning rate", false};
  if (name == "grad-norm") return {"Gradient norm (before clipping)", "global norm", false};
  if (name == "tokens-per-s") return {"Throughput", "tokens / s", false};
  if (name == "peak-memory") return {"Peak memory", "MiB", false};
  if (name == "probe-loss") return {"Loss on the probe document", "loss (nats/token)", false};
  if (name == "slot-types") return {"Memformer slot types on the probe document", "fraction of slots", false};
  if (name == "forget-norm") return {"Memformer forgetting-vector norms ||v_bias||", "norm", false};
  if (name == "block-mass") return {"RMT attention block masses on the probe document", "mass", false};
  if (name == "hash-entropy") return {"Hash-bucket entropy (first and last table)", "normalised entropy", false};
  return {"", "", false};
}

// x-range filter, then min/max per column when there are more points than columns.
viz::LineSeries downsample(const Curve& c, int64_t lo, int64_t hi, viz::Rgb color) {
  viz::LineSeries s;
  s.name = c.name;
  s.color = color;
  viz::MinMaxSeries mm;
  for (size_t i = 0; i < c.x.size(); ++i)
    if (c.x[i] >= static_cast<double>(lo) && c.x[i] <= static_cast<double>(hi)) mm.append(c.x[i], static_cast<float>(c.y[i]));
  if (mm.empty()) return s;
  if (mm.size() <= static_cast<size_t>(2 * kCurveColumns)) {
    for (size_t i = 0; i < mm.size(); ++i) {
      s.x.push_back(static_cast<float>(mm.x(i)));
      s.y.push_back(mm.y(i));
    }
    return s;
  }
  const double x0 = mm.x(0), x1 = mm.x(mm.size() - 1);
  const auto cols = mm.columns(x0, x1, kCurveColumns);
  const auto& bad = mm.non_finite();
  size_t b = 0;
  for (size_t k = 0; k < cols.size(); ++k) {
    const auto& col = cols[k];
    if (!col.has_points()) continue;
    // Non-finite points of this column stay visible as markers.
    while (b < bad.size() && bad[b] < col.last) {
      if (bad[b] >= col.first) {
        s.x.push_back(static_cast<float>(mm.x(bad[b])));
        s.y.push_back(mm.y(bad[b]));
      }
      ++b;
    }
    if (!col.has_finite()) continue;
    const float xc = static_cast<float>(x0 + (x1 - x0) * (static_cast<double>(k) + 0.5) / kCurveColumns);
    s.x.push_back(xc);
    s.y.push_back(col.min);
    if (col.max != col.min) {
      s.x.push_back(xc);
      s.y.push_back(col.max);
    }
  }
  return s;
}

std::string fmt_double(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

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
    const std::vector<Curve> cs = log.curves(name);
    if (cs.empty()) continue;  // this model / run has no such data
    const CurveInfo info = curve_info(name);
    viz::LineSpec spec;
    spec.title = info.title;
    spec.x_label = "training step";
    spec.y_label = info.y_label;
    spec.log_y = info.log_y;
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < cs.size(); ++i) {
      auto s = downsample(cs[i], lo, hi, palette()[i % palette().size()]);
      if (!s.x.empty()) spec.series.push_back(std::move(s));
      for (size_t j = 0; j < cs[i].x.size(); ++j)
        if (cs[i].x[j] >= static_cast<double>(lo) && cs[i].x[j] <= static_cast<double>(hi))
          rows.push_back({cs[i].name, std::to_string(static_cast<int64_t>(cs[i].x[j])), fmt_double(cs[i].y[j])});
    }
    if (spec.series.empty()) continue;
    const std::string base = dir + "/" + name;
    const viz::Figure fig = viz::make_lines(spec);
    if (fm.png) viz::write_png(fig, base + ".png", 2.0f), ++files;
    if (fm.svg) viz::write_svg(fig, base + ".svg"), ++files;
    if (fm.csv) viz::write_csv_table(base + ".csv", {"series", "step", "value"}, rows), ++files;
    out << "  " << name << " -> " << base << " (" << cs.size() << " series)\n";
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
