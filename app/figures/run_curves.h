// Figures of a recorded training session's curves (core/train/run_log.h), shared by
// `mnemoscope export --session` and the desktop app's dashboard export.
#pragma once
#include "app/figures/figures.h"
#include "core/train/run_log.h"
#include "viz/charts.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

// Titles and axis label of a curve name (RunLog::curve_names()): the figure's title and the
// dashboard chart's short one.
struct RunCurveInfo {
  const char* title;
  const char* short_title;
  const char* y_label;
  bool log_y;
};
RunCurveInfo run_curve_info(const std::string& name);

// Line chart of curve `name` for training steps lo..hi: at most two points (min/max) per
// column of the figure, NaN/Inf points kept (drawn as markers), a dashed vertical line at
// every curriculum change of `log` (not on the "segments" curve itself). With `compare`, that
// session's curves are added with "(B)" after their names. Empty series when no data.
viz::LineSpec run_curve_spec(const RunLog& log, const std::string& name, int64_t lo, int64_t hi,
                                 const RunLog* compare = nullptr);

// The palette index (palette::series) of a session's curve: train, valid and "valid, memory
// zeroed" keep one colour each in every chart (Loss, Perplexity and Accuracy: the Accuracy
// chart has no train curve, and "valid" would take the train colour there); any other curve
// its position in the chart. Figures and the dashboard both colour by it.
size_t curve_color(const std::string& curve_name, size_t position);

// "3→4 segments": the label of a curriculum change on a chart (figures and the dashboard).
std::string curriculum_mark_label(const RunLog::CurriculumMark& m);

// Writes <dir>/<name>.png/.svg (the chart) and .csv (every point: series,step,value) in the
// chosen formats; returns the paths, empty when the log has no such data. Throws
// viz::ExportError naming the path when a write fails.
std::vector<std::string> write_run_curve(const RunLog& log, const std::string& name, int64_t lo, int64_t hi,
                                             const std::string& dir, const FigureFormats& fm,
                                             const RunLog* compare = nullptr);

// Writes <dir>/final_evaluation.csv: the session's end-of-run evaluations (RunLog::final_results:
// split,zero_memory,step,loss,accuracy,bits_per_token). Returns the paths written, none when the
// session has no final evaluation (a run still training or stopped early).
std::vector<std::string> write_final_evaluations(const RunLog& log, const std::string& dir, const FigureFormats& fm);

}  // namespace mnemo::app
