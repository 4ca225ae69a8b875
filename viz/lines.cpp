// make_lines (viz/charts.h): series as lines over linear x and linear or log y, vertical
// markers, non-finite points as red crosses on the plot's edge, a legend right of the plot.
#include <algorithm>
#include <cmath>
#include <limits>

#include "viz/chart_frame.h"
#include "viz/charts.h"

namespace mnemo::viz {
namespace chart {
namespace {

constexpr Rgb kMarkerColor{120, 120, 120};  // vertical markers
constexpr Rgb kBadPointColor{220, 0, 0};
constexpr float kLegendRow = 18;
constexpr float kSameMarkGap = 14;  // px between the marks of a series drawn over its twin

double line_x(const LineSeries& ser, size_t i) {
  return ser.x.empty() ? static_cast<double>(i) : static_cast<double>(ser.x[i]);
}

bool line_y_ok(const LineSpec& s, float v) { return std::isfinite(v) && (!s.log_y || v > 0); }

void check_lines(const LineSpec& s) {
  const std::string kSpec = "LineSpec.";
  for (size_t k = 0; k < s.series.size(); ++k) {
    const LineSeries& ser = s.series[k];
    if (!ser.x.empty() && ser.x.size() != ser.y.size())
      fail(kSpec + "series[" + std::to_string(k) + "].x",
           "has " + std::to_string(ser.x.size()) + " entries, y has " + std::to_string(ser.y.size()) +
               " (x may also be empty)");
  }
  for (const auto& m : s.markers)
    if (!std::isfinite(m.x)) fail(kSpec + "markers", "has a non-finite x");
}

// The data's x and y range (markers widen x when there are data) and whether any point is
// left out (non-finite, or <= 0 on a log axis).
struct LineRange {
  double xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  bool any_bad = false;
};

LineRange line_range(const LineSpec& s) {
  LineRange r;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = xlo, yhi = -xlo;
  for (const auto& ser : s.series) {
    for (size_t i = 0; i < ser.y.size(); ++i) {
      double xv = line_x(ser, i);
      if (std::isfinite(xv)) {
        xlo = std::min(xlo, xv);
        xhi = std::max(xhi, xv);
      }
      if (line_y_ok(s, ser.y[i]) && std::isfinite(xv)) {
        ylo = std::min(ylo, static_cast<double>(ser.y[i]));
        yhi = std::max(yhi, static_cast<double>(ser.y[i]));
      } else {
        r.any_bad = true;
      }
    }
  }
  for (const auto& m : s.markers) {
    if (s.series.empty() || xlo > xhi) continue;  // no data: markers alone do not set a range
    xlo = std::min(xlo, static_cast<double>(m.x));
    xhi = std::max(xhi, static_cast<double>(m.x));
  }
  if (!(xlo <= xhi)) xlo = 0, xhi = 1;
  if (!(ylo <= yhi)) ylo = s.log_y ? 1 : 0, yhi = s.log_y ? 10 : 1;
  r.xlo = xlo;
  r.xhi = xhi;
  r.ylo = ylo;
  r.yhi = yhi;
  return r;
}

struct LegendEntry {
  std::string name;
  Rgb color;
  bool cross;
  bool marks = false;  // a series drawn as marks over the one it coincides with
};

std::string series_name(const LineSpec& s, size_t k) {
  return s.series[k].name.empty() ? "series " + std::to_string(k) : s.series[k].name;
}

// One entry per series (one that coincides with an earlier one says "same as" it), and one
// for the crosses when there are any.
std::vector<LegendEntry> line_legend(const LineSpec& s, bool any_bad, const std::vector<int>& same) {
  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < s.series.size(); ++k) {
    if (same[k] >= 0) {
      const std::string name = series_name(s, k) + " (same as " + series_name(s, static_cast<size_t>(same[k])) + ")";
      legend.push_back({fit_label(name, kTickSize, 320), s.series[k].color, false, true});
    } else {
      legend.push_back({fit_label(series_name(s, k), kTickSize, 200), s.series[k].color, false});
    }
  }
  if (any_bad) legend.push_back({s.log_y ? "non-finite or \u2264 0" : "non-finite", kBadPointColor, true});
  return legend;
}

// Right of the plot, from its top: a line (or a cross) and the name.
void emit_line_legend(Figure& f, const std::vector<LegendEntry>& legend, float lx, float top) {
  for (size_t k = 0; k < legend.size(); ++k) {
    float cy = top + 4 + (k + 0.5f) * kLegendRow;
    if (legend[k].cross) {
      put_line(f, lx + 7, cy - 4, lx + 15, cy + 4, legend[k].color, 2);
      put_line(f, lx + 7, cy + 4, lx + 15, cy - 4, legend[k].color, 2);
    } else {
      put_line(f, lx, cy, lx + 22, cy, legend[k].color, 2.5f);
      if (legend[k].marks) put_rect(f, lx + 11 - 3.5f, cy - 3.5f, 7, 7, legend[k].color, Rgb{255, 255, 255}, 1.0f);
    }
    put_text(f, lx + 28, cy + kTickSize * kCapHeight / 2, legend[k].name, kTickSize, kInk, Anchor::Start);
  }
}

// The plot's pixel mapping.
struct LinePlot {
  float x, y, w, h;
  const Scale& xs;
  const Scale& ys;
  float px(double xv) const { return x + static_cast<float>(xs.frac(xv)) * w; }
  float py(double yv) const { return y + h - static_cast<float>(ys.frac(yv)) * h; }
};

// A marker label on a white box at the top of the plot.
struct MarkerLabel {
  float x, y;
  std::string text;
  float w;
  Anchor anchor;
};

// Marker lines (under the series); returns their labels, drawn over the series: right of the
// line (left of it near the right edge), one row lower when a label would overlap the
// previous one.
std::vector<MarkerLabel> emit_marker_lines(Figure& f, const LineSpec& s, const LinePlot& p) {
  std::vector<MarkerLabel> marker_labels;
  float prev_right = -1e9f;
  int row = 0;
  for (const auto& m : s.markers) {
    if (m.x < p.xs.lo || m.x > p.xs.hi) continue;
    const float mx = std::round(p.px(m.x)) + 0.5f;
    put_line(f, mx, p.y, mx, p.y + p.h, kMarkerColor, 1.2f, true);
    if (m.label.empty()) continue;
    const std::string label = fit_label(m.label, kTickSize, 120);
    const float w = text_width(label, kTickSize);
    const bool left = mx + 4 + w > p.x + p.w;
    const float x0 = left ? mx - 4 - w : mx + 4;
    row = x0 < prev_right + 4 ? row + 1 : 0;
    prev_right = x0 + w;
    marker_labels.push_back({left ? mx - 4 : mx + 4, p.y + 4 + kTickSize * kAscent + row * (line_height(kTickSize) + 2),
                             label, w, left ? Anchor::End : Anchor::Start});
  }
  return marker_labels;
}

// The series' lines and point marks; returns where the left-out points go (their crosses
// are drawn over every series).
std::vector<std::pair<float, float>> emit_series(Figure& f, const LineSpec& s, const LinePlot& p,
                                                 const std::vector<int>& same) {
  std::vector<std::pair<float, float>> bad_points;
  for (size_t k = 0; k < s.series.size(); ++k) {
    const LineSeries& ser = s.series[k];
    const size_t m = ser.y.size();
    auto good = [&](size_t i) { return i < m && std::isfinite(line_x(ser, i)) && line_y_ok(s, ser.y[i]); };
    if (same[k] >= 0) {
      // The same points as an earlier series, whose line it would hide exactly: square marks
      // (white-edged) at least kSameMarkGap px apart on top of that line instead, so both
      // stay visible; the legend says "same as".
      float last_x = -1e9f;
      for (size_t i = 0; i < m; ++i) {
        if (!good(i)) continue;
        const float x = p.px(line_x(ser, i));
        if (x - last_x < kSameMarkGap && i + 1 < m) continue;
        put_rect(f, x - 3.5f, p.py(ser.y[i]) - 3.5f, 7, 7, ser.color, Rgb{255, 255, 255}, 1.0f);
        last_x = x;
      }
      continue;
    }
    for (size_t i = 0; i < m; ++i) {
      double xv = line_x(ser, i);
      if (!good(i)) {
        float bx = std::isfinite(xv) ? p.px(xv) : p.x;
        float by = (std::isinf(ser.y[i]) && ser.y[i] > 0) ? p.y : p.y + p.h;
        bad_points.push_back({bx, by});
        continue;
      }
      if (good(i + 1))
        put_line(f, p.px(xv), p.py(ser.y[i]), p.px(line_x(ser, i + 1)), p.py(ser.y[i + 1]), ser.color, 1.8f);
      bool prev_good = i > 0 && good(i - 1);
      // A lone point, or every point of a short series (a few probe recordings would
      // otherwise read as a bare straight line), gets a marker.
      if ((!prev_good && !good(i + 1)) || m <= kMarkPointsUpTo)
        put_rect(f, p.px(xv) - 2.5f, p.py(ser.y[i]) - 2.5f, 5, 5, ser.color);
    }
  }
  return bad_points;
}

}  // namespace
}  // namespace chart

std::vector<int> coinciding_series(const LineSpec& s) {
  std::vector<int> same(s.series.size(), -1);
  auto equal = [](float a, float b) {
    if (!std::isfinite(a) || !std::isfinite(b)) return (std::isnan(a) && std::isnan(b)) || a == b;
    return std::fabs(a - b) <= 1e-6f * std::max(1.0f, std::max(std::fabs(a), std::fabs(b)));
  };
  for (size_t k = 1; k < s.series.size(); ++k) {
    const LineSeries& b = s.series[k];
    if (b.y.empty()) continue;
    for (size_t j = 0; j < k && same[k] < 0; ++j) {
      const LineSeries& a = s.series[j];
      if (same[j] >= 0 || a.y.size() != b.y.size()) continue;
      bool eq = true;
      for (size_t i = 0; i < a.y.size() && eq; ++i)
        eq = chart::line_x(a, i) == chart::line_x(b, i) && equal(a.y[i], b.y[i]);
      if (eq) same[k] = static_cast<int>(j);
    }
  }
  return same;
}

Figure make_lines(const LineSpec& s) {
  using namespace chart;
  check_lines(s);
  const LineRange range = line_range(s);

  const float plot_w = 520, plot_h = 320;
  Scale xs = linear_scale(range.xlo, range.xhi, 8, true);
  Scale ys = s.log_y ? log_scale(range.ylo, range.yhi, 8) : linear_scale(range.ylo, range.yhi, 7, true);
  float tick_w = max_width(ys.labels, kTickSize);
  const std::vector<int> same = coinciding_series(s);
  const std::vector<LegendEntry> legend = line_legend(s, range.any_bad, same);
  float legend_w = 0;
  for (const auto& e : legend) legend_w = std::max(legend_w, 28 + text_width(e.name, kTickSize));

  Frame fr(s.title, s.y_label, s.x_label);
  fr.head(10);
  fr.left_label();
  float plot_x = fr.left_axis(tick_w), plot_y = std::ceil(fr.y);
  // Half of the widest x tick label may hang over the right edge.
  float right = plot_x + plot_w + (legend.empty() ? 0 : 16 + legend_w);
  right = std::max(right, plot_x + plot_w + text_width(xs.labels.empty() ? "" : xs.labels.back(), kTickSize) / 2) + kPad;
  fr.bottom_axis(plot_y + plot_h, line_height(kTickSize));
  fr.bottom_label();
  float legend_bottom = plot_y + 4 + legend.size() * kLegendRow;
  Figure f;
  plot_x += fr.size(f, right, std::max(fr.y, legend_bottom) + kPad);

  emit_value_axis(f, ys, Side::Left, plot_x, plot_y, plot_w, plot_h, true);
  emit_value_axis(f, xs, Side::Bottom, plot_x, plot_y, plot_w, plot_h, true);
  put_rect(f, plot_x, plot_y, plot_w, plot_h, std::nullopt, kAxisColor, 1.0f);

  const LinePlot plot{plot_x, plot_y, plot_w, plot_h, xs, ys};
  const std::vector<MarkerLabel> marker_labels = emit_marker_lines(f, s, plot);
  for (const auto& b : emit_series(f, s, plot, same)) {
    put_line(f, b.first - 4, b.second - 4, b.first + 4, b.second + 4, kBadPointColor, 2);
    put_line(f, b.first - 4, b.second + 4, b.first + 4, b.second - 4, kBadPointColor, 2);
  }
  for (const auto& l : marker_labels) {
    const float bx = l.anchor == Anchor::End ? l.x - l.w : l.x;
    put_rect(f, bx - 2, l.y - kTickSize * kAscent - 1, l.w + 4, line_height(kTickSize) + 1, Rgb{255, 255, 255});
    put_text(f, l.x, l.y, l.text, kTickSize, kInk, l.anchor);
  }
  emit_line_legend(f, legend, plot_x + plot_w + 16, plot_y);

  fr.draw_head(f);
  fr.draw_left_label(f, plot_y + plot_h / 2, plot_h);
  fr.draw_bottom_label(f, plot_x + plot_w / 2, plot_w + 60);
  return f;
}

}  // namespace mnemo::viz
