// `mnemoscope plot`: a line chart (PNG + SVG, viz/charts.h) from columns of a CSV file, for
// experiment write-ups (docs/experiments/): loss curves, bucket entropy over training.
//
//   plot --csv F --x COL --y COL[,COL...] [--group COL] [--title T] [--x-label X]
//        [--y-label Y] [--log-y] --out BASE
// One series per y column and, with --group, per distinct value of that column (in order
// of first appearance; the series is named "<group value> <y column>", or just the group
// value with one y column). Rows whose y cell is empty are skipped. Writes BASE.png and
// BASE.svg. The CSV is plain: a header row, comma-separated cells, no quoting.
#include "app/commands/commands.h"

#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "app/figures/palette.h"
#include "viz/charts.h"
#include "viz/export.h"
#include "core/io/atomic_file.h"
#include "core/io/read_file.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace mnemo::app {

struct PlotCommand {
  CLI::App* cmd = nullptr;
  std::string csv, x, y, group, title, x_label, y_label, out;
  bool log_y = false;
};

namespace {

// The largest CSV plotted (docs/reliability.md#caps): as large as a document may be.
constexpr uint64_t kMaxPlotCsvBytes = 256ull << 20;

std::vector<std::string> split_cells(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::stringstream ss(line);
  while (std::getline(ss, cell, sep)) out.push_back(cell);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}


}  // namespace

static CLI::App* add_plot_command(CLI::App& app, PlotCommand& c) {
  c.cmd = app.add_subcommand("plot", "line chart (PNG + SVG) from columns of a CSV file");
  c.cmd->add_option("--csv", c.csv, "CSV file with a header row")->required();
  c.cmd->add_option("--x", c.x, "x column")->required();
  c.cmd->add_option("--y", c.y, "y column(s), comma-separated")->required();
  c.cmd->add_option("--group", c.group, "one series per distinct value of this column");
  c.cmd->add_option("--title", c.title, "chart title");
  c.cmd->add_option("--x-label", c.x_label, "x axis label (default: the x column)");
  c.cmd->add_option("--y-label", c.y_label, "y axis label (default: the y column)");
  c.cmd->add_flag("--log-y", c.log_y, "logarithmic y axis");
  c.cmd->add_option("--out", c.out, "output path without extension (writes .png and .svg)")->required();
  return c.cmd;
}

static int run_plot_command(const PlotCommand& c, std::ostream& out) {
  // Validate everything before writing anything: --out's folder must exist and be writable
  // (the PNG is written first; a failing SVG would otherwise leave half the pair).
  {
    const std::string dir = io::parent_directory(c.out);
    if (c.out.empty() || c.out.back() == '/' || is_dir(c.out))
      throw UsageError("--out '" + c.out + "' must be a path without extension, e.g. docs/figures/loss (writes .png and .svg)");
    if (!is_dir(dir)) throw UsageError("--out '" + c.out + "': folder '" + dir + "' does not exist; create it first");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) throw UsageError("--out '" + c.out + "': folder '" + dir + "' is not writable");
  }
  std::string text;  // read through the descriptor that was checked: a FIFO is refused, never waited on
  if (std::string why = io::read_regular_file(c.csv, &text, kMaxPlotCsvBytes); !why.empty())
    throw UsageError("--csv: '" + c.csv + "' " + (why == io::kNoSuchFile ? std::string("cannot be opened; check the path") : why));
  std::istringstream in(std::move(text));
  std::string line;
  if (!std::getline(in, line)) throw UsageError("--csv: '" + c.csv + "' is empty");
  const auto header = split_cells(line, ',');
  auto col = [&](const std::string& name, const char* flag) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    throw UsageError(std::string(flag) + ": '" + c.csv + "' has no column '" + name + "'");
  };
  const size_t xi = col(c.x, "--x");
  std::vector<std::string> ys = split_cells(c.y, ',');
  std::vector<size_t> yi;
  for (const auto& y : ys) yi.push_back(col(y, "--y"));
  const bool grouped = !c.group.empty();
  const size_t gi = grouped ? col(c.group, "--group") : 0;
  std::vector<std::string> order;
  std::map<std::string, viz::LineSeries> series;
  int64_t row = 1;
  while (std::getline(in, line)) {
    ++row;
    if (line.empty()) continue;
    const auto cells = split_cells(line, ',');
    auto cell = [&](size_t i) { return i < cells.size() ? cells[i] : std::string(); };
    for (size_t k = 0; k < ys.size(); ++k) {
      const std::string yv = cell(yi[k]);
      if (yv.empty()) continue;
      std::string name = grouped ? cell(gi) : std::string();
      if (!grouped || ys.size() > 1) name += (name.empty() ? "" : " ") + ys[k];
      if (!series.count(name)) {
        order.push_back(name);
        series[name].name = name;
      }
      try {
        series[name].x.push_back(std::stof(cell(xi)));
        series[name].y.push_back(std::stof(yv));
      } catch (const std::exception&) {
        throw UsageError("--csv: row " + std::to_string(row) + " of '" + c.csv + "' has a cell that is not a number");
      }
    }
  }
  if (order.empty()) throw UsageError("--csv: '" + c.csv + "' has no data rows for the y column(s)");
  viz::LineSpec s;
  s.title = c.title;
  s.x_label = c.x_label.empty() ? c.x : c.x_label;
  s.y_label = c.y_label.empty() ? c.y : c.y_label;
  s.log_y = c.log_y;
  for (size_t i = 0; i < order.size(); ++i) {
    auto ser = series[order[i]];
    ser.color = palette::series(i);
    s.series.push_back(std::move(ser));
  }
  auto fig = viz::make_lines(s);
  viz::write_png(fig, c.out + ".png", 2.0f);
  viz::write_svg(fig, c.out + ".svg");
  out << "wrote " << c.out << ".png and " << c.out << ".svg (" << order.size() << " series)\n";
  return 0;
}

namespace {
class PlotCmd : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_plot_command(parent, c_); }
  int run(std::ostream& out) override { return run_plot_command(c_, out); }

 private:
  PlotCommand c_;
};
}  // namespace

std::unique_ptr<Command> make_plot_command() { return std::make_unique<PlotCmd>(); }

}  // namespace mnemo::app
