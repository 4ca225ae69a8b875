// What the chart builders of viz/charts.h share, so that each draws only its own data: the
// style constants, label fitting, value scales with nice ticks, value and category axes, and
// the frame around the plot (a bold title centred over the figure with an optional subtitle,
// an axis label rotated left of the plot and one centred below it, kPad around everything,
// the content centred under a title wider than it). Internal to viz/: the builders'
// contracts are in viz/charts.h.
#pragma once

#include <string>
#include <vector>

#include "viz/figure.h"

namespace mnemo::viz::chart {

inline constexpr Rgb kInk{25, 25, 25};
inline constexpr Rgb kMuted{95, 95, 95};
inline constexpr Rgb kAxisColor{70, 70, 70};
inline constexpr Rgb kGridColor{226, 226, 226};
inline constexpr Rgb kBarColor{76, 114, 176};  // bars and histogram bins

inline constexpr float kPad = 14;
inline constexpr float kTitleSize = 15;
inline constexpr float kSubtitleSize = 11;
inline constexpr float kAxisLabelSize = 12;
inline constexpr float kTickSize = 11;
inline constexpr float kMinLabelSize = 9;     // nothing smaller is ever drawn
inline constexpr float kLabelPitch = 1.15f;   // min label spacing, in em
inline constexpr float kMaxLabelWidth = 150;  // longer labels are cut with an ellipsis
inline constexpr float kTickLength = 4;

// ---- text --------------------------------------------------------------------------------

float line_height(float size);
// Sanitised label, cut at a code point boundary with "…" so it is at most max_w wide.
std::string fit_label(const std::string& raw, float size, float max_w, bool bold = false);
// A data value for a label: 3 significant digits, whole numbers from 1000 to 1e7, "nan" / "inf".
std::string format_value(double v);
float max_width(const std::vector<std::string>& labels, float size, bool bold = false);
// Rounds a figure size up to whole px (a size a hair above a whole px stays that px).
float ceil_px(float v);
// Throws std::invalid_argument("<field>: <why>"), the builders' spec errors.
[[noreturn]] void fail(const std::string& field, const std::string& why);

// ---- value scales ------------------------------------------------------------------------

// A linear (or log10) value axis: [lo, hi] maps to frac 0..1; ticks inside [lo, hi].
struct Scale {
  double lo = 0, hi = 1, step = 1;
  bool log = false;  // then lo / hi / ticks are decades (exponents)
  std::vector<double> ticks;
  std::vector<std::string> labels;

  double frac(double v) const;
};
// Smallest 1/2/5 x 10^k step that puts at most max_count ticks on [lo, hi] (after rounding
// the ends out to whole steps when expand).
double choose_step(double lo, double hi, int max_count, bool expand);
// Ticks and their labels: every whole step in [lo, hi].
void fill_ticks(Scale& s);
// Linear scale covering [lo, hi]; expand = round the ends out to whole steps.
Scale linear_scale(double lo, double hi, int max_ticks, bool expand);
// log10 scale over whole decades covering [lo, hi] (both > 0).
Scale log_scale(double lo, double hi, int max_ticks);

// ---- axes --------------------------------------------------------------------------------

enum class Side { Left, Right, Bottom };

// Ticks and tick labels of a value axis on one side of the rectangle (x, y, w, h) — the plot,
// or a heatmap's colorbar — with `grid`, light gridlines across it. Per tick, in this order:
// gridline, tick, label.
void emit_value_axis(Figure& f, const Scale& s, Side side, float x, float y, float w, float h, bool grid);

// Category labels along one axis: which to show, at what size, rotated or not.
struct CategoryLabels {
  std::vector<std::string> text;  // fitted; empty string = not shown
  float size = kTickSize;
  bool rotated = false;
  float extent = 0;  // px the labels need away from the axis
  int step = 1;      // every step-th label is shown (1: all); see viz::thinning_note()
};
// pitch: px between neighbouring categories. horizontal_axis: labels sit below the plot
// (may rotate); otherwise they sit left of it (never rotate, thin instead). keep: a category
// whose label is always shown, in bold (-1: none).
CategoryLabels layout_categories(const std::vector<std::string>& raw, float pitch, bool horizontal_axis,
                                 int keep = -1);
// A tick and its label for each shown category i, centred at start + pitch * (i + 0.5) along
// the axis line at `axis` (Left: an x, Bottom: a y). Left: labels end at label_x, the one of
// category `bold` in bold. Bottom: labels hang from label_top (rotated ones end there).
void emit_categories(Figure& f, const CategoryLabels& c, Side side, float start, float pitch, float axis,
                     float label_pos, int bold = -1);

// ---- the frame ---------------------------------------------------------------------------

// Title, subtitle, the two axis labels and the figure's size. Laid out top-down and left to
// right by moving the cursors x and y past what each builder places; then size() sizes the
// figure and returns the shift ox that centres the content under a wider title (the builder
// adds it to its own x positions; the left label's is shifted here). The draw_ calls emit.
class Frame {
 public:
  Frame(std::string title, std::string left_label, std::string bottom_label);
  float x = kPad, y = kPad;  // layout cursors: where the next part goes

  // The title (when there is one) and `gap` px; then the subtitle (when given) and 10 px.
  void head(float gap, std::string subtitle = std::string());
  // Room for the left label (when there is one), rotated, and 6 px.
  void left_label();
  // Room for a value axis' or category labels `extent` px wide left of the plot, and its
  // ticks; returns the plot's left edge (the next whole px).
  float left_axis(float extent);
  // Past a plot ending at plot_bottom: its ticks and the labels `extent` px tall below.
  void bottom_axis(float plot_bottom, float extent);
  // 8 px and the bottom label (when there is one).
  void bottom_label();
  float bottom_label_base() const { return bottom_base_; }  // its baseline
  // Sizes the figure to the content's right and bottom edges (padding included), widened for
  // the title and subtitle; returns ox.
  float size(Figure& f, float right, float bottom);

  void draw_head(Figure& f) const;  // title and subtitle, centred on the figure
  // The left label, fitted to `room`, centred on cy (reading bottom to top).
  void draw_left_label(Figure& f, float cy, float room) const;
  // The bottom label, fitted to `room`, centred on cx.
  void draw_bottom_label(Figure& f, float cx, float room) const;

 private:
  std::string title_, subtitle_, left_, bottom_;
  float title_base_ = 0, subtitle_base_ = 0, left_x_ = 0, bottom_base_ = 0;
};

}  // namespace mnemo::viz::chart
