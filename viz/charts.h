// Chart builders: plain data in, a Figure out (write it with export.h).
// All builders validate their spec and throw std::invalid_argument whose message starts
// with the spec type and names the offending field, e.g. "HeatmapSpec.values: ...".
// Non-finite data are never dropped silently: heatmap cells get the colormap's marker
// colour (nan_color) and a "NaN/Inf" legend swatch; line points become red 'x' markers.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "viz/colormap.h"
#include "viz/figure.h"

namespace mnemo::viz {

// Heatmap of a rows x cols matrix (row-major values). Layout: title on top, optional column
// group brackets, the cells, column labels below (horizontal when they fit a cell, at a
// smaller size down to 9 px before they rotate -90; thinned to every n-th label when cells
// are narrower than a legible >= 9 px label, and then the axis label says "every n-th label
// shown"), row labels left (thinned the same way), a vertical colorbar with nice-number
// ticks right.
// cell: cell edge in px (cell_h, when given, the cells' height: a map stretched to a width).
// A direction whose cells would exceed 2100 px shrinks (to multiples
// of 0.5 px while >= 1 px) so the figure stays within ~2400 px; if only one direction
// shrinks the other keeps `cell`, if both do the cells stay square (with cell_h: each fits). vmin/vmax: NaN -> min/max
// of the finite values (with Diverging and both NaN: -m..m, m = max |value|, so white = 0;
// a constant map gets +-0.5); values outside are clamped to the ends. Separators: a line is drawn
// before each listed index (0..cols / 0..rows). col_groups: (first column, label) spans,
// each running to the next group's first column. highlight_row: outlined, label in bold.
// Cells are Rect prims with cell = true, exactly rows*cols of them, in row-major order.
struct HeatmapSpec {
  std::string title, x_label, y_label, colorbar_label;
  int rows = 0, cols = 0;
  std::vector<float> values;
  std::vector<std::string> row_labels, col_labels;
  float vmin = NAN, vmax = NAN;
  Colormap cmap = Colormap::Viridis;
  float cell = 14;
  float cell_h = NAN;  // cell height when not `cell` (NaN: square cells); e.g. a map stretched to a width
  std::vector<int> col_separators, row_separators;
  std::vector<std::pair<int, std::string>> col_groups;
  int highlight_row = -1;
};
Figure make_heatmap(const HeatmapSpec& spec);

// Bar chart. labels: empty (-> "0", "1", ...) or one per value. colors: empty (one default
// colour), one colour for all, or one per value. The value axis has nice ticks and light
// gridlines and always includes 0. show_values prints each value at its bar end (skipped
// when bars are too thin to carry a legible label). reference_line: dashed line at that
// value, labelled. NaN/Inf values draw no bar but a marker-coloured "nan"/"inf" label.
// x_label names the category axis and y_label the value axis in both orientations
// (horizontal = true puts categories on the left, values along the bottom).
struct BarSpec {
  std::string title, x_label, y_label;
  std::vector<std::string> labels;
  std::vector<float> values;
  std::vector<Rgb> colors;
  bool horizontal = false;
  bool show_values = true;
  std::optional<float> reference_line;
};
Figure make_bars(const BarSpec& spec);

// Line chart with a legend right of the plot. x empty -> 0, 1, 2, ...; otherwise
// x.size() == y.size(). Consecutive finite points are joined; a NaN/Inf point (or y <= 0
// with log_y) breaks the line and is drawn as a red 'x' on the plot edge (top for +Inf,
// bottom otherwise) at its x; such points add a "non-finite" legend entry. A series of at
// most kMarkPointsUpTo points marks each point, so a short curve is not read as a line.
// Series of at most this many points also mark every finite point (a 5 x 5 square).
inline constexpr size_t kMarkPointsUpTo = 40;
struct LineSeries {
  std::string name;
  std::vector<float> x, y;
  Rgb color{31, 119, 180};
};
// A vertical dashed line across the plot at x (e.g. a curriculum change), its label at the top.
struct LineMarker {
  float x = 0;
  std::string label;
};
struct LineSpec {
  std::string title, x_label, y_label;
  std::vector<LineSeries> series;
  bool log_y = false;
  std::vector<LineMarker> markers;  // drawn under the series; their x widen the x range
};
// A series with the same points as an earlier one (same x, y equal to 1e-6 relative) would
// hide it exactly (e.g. "valid" and "valid, memory zeroed" of a model whose memory does
// nothing): make_lines draws it as white-edged square marks every >= 14 px on top of the
// other's line, and its legend entry (a line with a mark) reads "NAME (same as OTHER)".
// coinciding_series: for each series the index of the earlier one it coincides with, or -1.
std::vector<int> coinciding_series(const LineSpec& spec);
Figure make_lines(const LineSpec& spec);

// Histogram over [lo, hi] (defaults: finite min / max of samples) with `bins` equal bins
// (bins >= 1, lo < hi). Samples outside the range and non-finite samples are not counted;
// a subtitle states n and how many were left out.
struct HistogramSpec {
  std::string title, x_label, y_label;
  std::vector<float> samples;
  int bins = 32;
  std::optional<float> lo, hi;
};
Figure make_histogram(const HistogramSpec& spec);

// Printable label for a token's raw bytes (display only; not reversible):
//   printable ASCII 0x21..0x7E  -> as is (a backslash stays a single backslash)
//   ' '  -> "␣" (U+2423)        '\n' -> "↵" (U+21B5)       '\t' -> "\t" (2 chars)
//   other bytes < 0x20, 0x7F   -> "\xHH" (upper-case hex)
//   valid multi-byte UTF-8     -> kept when the figure font has a glyph for it and it is a
//        visible character (so DejaVu's Latin, Greek, Cyrillic, symbols are kept); escaped
//        byte by byte as "\xHH" otherwise, e.g. CJK, emoji, invisible or combining
//        characters (U+00A0, U+00AD, U+0300..036F, U+2000..200F, U+2028..202F,
//        U+205F..206F, U+FEFF), C1 controls, and a literal ␣ or ↵ (kept unambiguous).
//        Without a loadable font, Latin-1..Latin Extended-B, Greek and Cyrillic are kept.
//   invalid UTF-8 bytes (e.g. a token holding half a character) -> "\xHH" each.
// An empty token gives "".
std::string token_label(std::string_view bytes);

// What a thinned category axis says about itself, e.g. "every 2nd label shown" ("" when
// step <= 1), so a reader of "e r o" under "eror" can tell that labels were left out, not
// tokens. with_thinning_note: `label` with the note appended in parentheses (the note alone
// when label is empty; label unchanged when step <= 1). The app's heatmaps say the same.
std::string ordinal(int n);  // "1st", "2nd", "3rd", "4th", "11th", "22nd", ...
std::string thinning_note(int step);
std::string with_thinning_note(const std::string& label, int step);

// Tick helpers, exposed for tests and the GUI.
// nice_ticks(): "nice" values (1, 2, 5 x 10^k steps) inside [lo, hi], at most max_count.
// format_tick(): v printed with just enough decimals for `step` (no "-0").
std::vector<double> nice_ticks(double lo, double hi, int max_count);
std::string format_tick(double v, double step);
// format_log_tick(): the label of a log axis's tick at 10^exponent, as the value: a decade as
// the figures write it ("0.01", "10", "1e6"), any other as 3 significant digits (10^0.8 ->
// "6.31", not "1e0.8").
std::string format_log_tick(double exponent);
// The step to format `ticks` of [lo, hi] with: their spacing, or hi - lo when there is one tick
// (a lone 0.5 on a 0.4..0.6 axis is "0.5", not "0").
double tick_step(const std::vector<double>& ticks, double lo, double hi);

}  // namespace mnemo::viz
