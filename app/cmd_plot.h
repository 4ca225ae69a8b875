// `mnemoscope plot`: a line chart (PNG + SVG, viz/charts.h) from columns of a CSV file, for
// experiment write-ups (docs/experiments/): loss curves, bucket entropy over training.
//
//   plot --csv F --x COL --y COL[,COL...] [--group COL] [--title T] [--x-label X]
//        [--y-label Y] [--log-y] --out BASE
// One series per y column and, with --group, per distinct value of that column (in order
// of first appearance; the series is named "<group value> <y column>", or just the group
// value with one y column). Rows whose y cell is empty are skipped. Writes BASE.png and
// BASE.svg. The CSV is plain: a header row, comma-separated cells, no quoting.
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct PlotCommand {
  CLI::App* cmd = nullptr;
  std::string csv, x, y, group, title, x_label, y_label, out;
  bool log_y = false;
};

void add_plot_command(CLI::App& app, PlotCommand& c);
// -1 when the command was not selected; throws UsageError on bad input.
int run_plot_command(const PlotCommand& c, std::ostream& out);

}  // namespace mnemo::app
