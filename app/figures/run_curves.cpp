#include "app/figures/run_curves.h"

#include "app/figures/palette.h"

#include "viz/export.h"
#include "viz/series.h"

#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {

constexpr int kCurveColumns = 1500;  // at most two drawn points per column (min/max)

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


}  // namespace

RunCurveInfo run_curve_info(const std::string& name) {
  if (name == "loss") return {"Loss (train steps, valid evaluations)", "Loss", "loss (nats/token)", false};
  if (name == "perplexity") return {"Perplexity", "Perplexity", "perplexity", true};
  if (name == "accuracy") return {"Per-character accuracy", "Accuracy", "accuracy", false};
  if (name == "lr") return {"Learning rate", "Learning rate", "learning rate", false};
  if (name == "grad-norm") return {"Gradient norm (before clipping)", "Gradient norm", "global norm", false};
  if (name == "tokens-per-s") return {"Throughput", "Tokens/s", "tokens / s", false};
  if (name == "peak-memory") return {"Peak memory", "Peak memory (MiB)", "MiB", false};
  if (name == "probe-loss") return {"Loss on the probe document", "Probe loss", "loss (nats/token)", false};
  if (name == "slot-types")
    return {"Memformer slot types on the probe document", "Slot types", "fraction of slots", false};
  if (name == "forget-norm")
    return {"Memformer forgetting-vector norms ||v_bias||", "Forgetting norms", "norm", false};
  if (name == "block-mass")
    return {"RMT attention block masses on the probe document", "RMT block masses", "mass", false};
  if (name == "hash-entropy")
    return {"Hash-bucket entropy (first and last table)", "Bucket entropy", "normalised entropy", false};
  if (name == "segments") return {"Curriculum: segments per example", "Segments", "segments", false};
  if (name == "rank-tokens-per-s")
    return {"Throughput per rank (forward/backward)", "Tokens/s per rank", "tokens / s", false};
  if (name == "allreduce-share")
    return {"Gradient allreduce share of step time (rank 0)", "Allreduce share", "fraction of step time", false};
  return {"", "", "", false};
}

size_t curve_color(const std::string& curve_name, size_t position) {
  if (curve_name == "train") return 0;
  if (curve_name == "valid") return 1;
  if (curve_name == kValidZeroMemoryCurve) return 2;
  return position;
}

viz::LineSpec run_curve_spec(const RunLog& log, const std::string& name, int64_t lo, int64_t hi, const RunLog* compare) {
  const RunCurveInfo info = run_curve_info(name);
  viz::LineSpec spec;
  spec.title = info.title;
  spec.x_label = "training step";
  spec.y_label = info.y_label;
  spec.log_y = info.log_y;
  size_t color = 0;  // the compared session's curves take the colours after the main one's
  for (int which = 0; which < (compare ? 2 : 1); ++which) {
    const RunLog& l = which == 0 ? log : *compare;
    for (const auto& c : l.curves(name)) {
      const size_t position = color++;
      auto s = downsample(c, lo, hi, palette::series(which == 0 ? curve_color(c.name, position) : position));
      if (which == 1) s.name += " (B)";
      if (!s.x.empty()) spec.series.push_back(std::move(s));
    }
  }
  // Curriculum changes of the main session: a dashed line where the segment count moved.
  if (!spec.series.empty() && name != "segments")
    for (const auto& m : log.curriculum_marks())
      if (m.step >= lo && m.step <= hi)
        spec.markers.push_back({static_cast<float>(m.step), curriculum_mark_label(m)});
  return spec;
}

std::string curriculum_mark_label(const RunLog::CurriculumMark& m) {
  return std::to_string(m.from) + "\u2192" + std::to_string(m.to) + " segments";
}

std::vector<std::string> write_run_curve(const RunLog& log, const std::string& name, int64_t lo, int64_t hi,
                                             const std::string& dir, const FigureFormats& fm, const RunLog* compare) {
  std::vector<std::string> out;
  viz::LineSpec spec = run_curve_spec(log, name, lo, hi, compare);
  if (spec.series.empty()) return out;
  const std::string base = dir + "/" + name;
  write_figure(viz::make_lines(spec), base, fm, out);
  if (fm.csv) {
    std::vector<std::vector<std::string>> rows;
    for (int which = 0; which < (compare ? 2 : 1); ++which) {
      const RunLog& l = which == 0 ? log : *compare;
      for (const auto& c : l.curves(name))
        for (size_t j = 0; j < c.x.size(); ++j)
          if (c.x[j] >= static_cast<double>(lo) && c.x[j] <= static_cast<double>(hi))
            rows.push_back({which == 1 ? c.name + " (B)" : c.name, std::to_string(static_cast<int64_t>(c.x[j])),
                            viz::csv_number(c.y[j])});
    }
    write_table(base + ".csv", {"series", "step", "value"}, rows, fm, out);
  }
  return out;
}

std::vector<std::string> write_final_evaluations(const RunLog& log, const std::string& dir, const FigureFormats& fm) {
  std::vector<std::string> out;
  const auto finals = log.final_results();
  if (finals.empty() || !fm.csv) return out;
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : finals)
    rows.push_back({f.split, f.zero_memory ? "true" : "false", std::to_string(f.step), viz::csv_number(f.loss),
                    viz::csv_number(f.accuracy), viz::csv_number(f.bits_per_token)});
  write_table(dir + "/final_evaluation.csv", {"split", "zero_memory", "step", "loss", "accuracy", "bits_per_token"}, rows,
              fm, out);
  return out;
}

}  // namespace mnemo::app
