// make_histogram (viz/charts.h): counts of samples in equal bins, a subtitle saying how
// many were counted and why the others were not.
#include <algorithm>
#include <cmath>
#include <limits>

#include "viz/chart_frame.h"
#include "viz/charts.h"

namespace mnemo::viz {
namespace chart {
namespace {

void check_histogram(const HistogramSpec& s) {
  const std::string kSpec = "HistogramSpec.";
  if (s.bins < 1 || s.bins > 100000)
    fail(kSpec + "bins", "must be in 1..100000 (got " + std::to_string(s.bins) + ")");
  if (s.lo && !std::isfinite(*s.lo)) fail(kSpec + "lo", "must be finite");
  if (s.hi && !std::isfinite(*s.hi)) fail(kSpec + "hi", "must be finite");
  if (s.lo && s.hi && !(*s.lo < *s.hi)) fail(kSpec + "lo", "must be < hi");
}

struct Bins {
  double lo = 0, hi = 1;
  std::vector<size_t> counts;
  size_t counted = 0, outside = 0, non_finite = 0;
};

// The range (lo / hi, else the finite samples' min / max) and the count of each bin.
Bins count_bins(const HistogramSpec& s) {
  Bins b;
  double dmin = std::numeric_limits<double>::infinity(), dmax = -dmin;
  for (float v : s.samples) {
    if (std::isfinite(v)) {
      dmin = std::min(dmin, static_cast<double>(v));
      dmax = std::max(dmax, static_cast<double>(v));
    } else {
      ++b.non_finite;
    }
  }
  double lo = s.lo ? *s.lo : (dmin <= dmax ? dmin : 0.0);
  double hi = s.hi ? *s.hi : (dmin <= dmax ? dmax : 1.0);
  if (s.lo && !s.hi && hi <= lo) hi = lo + 1;
  if (s.hi && !s.lo && lo >= hi) lo = hi - 1;
  if (hi <= lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  b.counts.assign(static_cast<size_t>(s.bins), 0);
  for (float v : s.samples) {
    if (!std::isfinite(v)) continue;
    if (v < lo || v > hi) {
      ++b.outside;
      continue;
    }
    size_t k = static_cast<size_t>((v - lo) / (hi - lo) * s.bins);
    if (k >= b.counts.size()) k = b.counts.size() - 1;
    ++b.counts[k];
    ++b.counted;
  }
  b.lo = lo;
  b.hi = hi;
  return b;
}

// "n = 1000 (not counted: 2 non-finite, 3 outside the range)"
std::string histogram_subtitle(const Bins& b) {
  std::string subtitle = "n = " + std::to_string(b.counted);
  if (b.non_finite || b.outside) {
    subtitle += " (not counted:";
    if (b.non_finite) subtitle += " " + std::to_string(b.non_finite) + " non-finite";
    if (b.non_finite && b.outside) subtitle += ",";
    if (b.outside) subtitle += " " + std::to_string(b.outside) + " outside the range";
    subtitle += ")";
  }
  return subtitle;
}

}  // namespace
}  // namespace chart

Figure make_histogram(const HistogramSpec& s) {
  using namespace chart;
  check_histogram(s);
  const Bins bins = count_bins(s);
  size_t max_count = 0;
  for (size_t c : bins.counts) max_count = std::max(max_count, c);

  const float plot_w = 520, plot_h = 300;
  Scale xs = linear_scale(bins.lo, bins.hi, 8, false);
  Scale ys = linear_scale(0, std::max<double>(1, max_count), 6, true);
  if (ys.step < 1) {  // counts are whole
    ys.step = 1;
    ys.hi = std::ceil(ys.hi);
    fill_ticks(ys);
  }
  float tick_w = max_width(ys.labels, kTickSize);

  Frame fr(s.title, s.y_label, s.x_label);
  fr.head(2, histogram_subtitle(bins));
  fr.left_label();
  float plot_x = fr.left_axis(tick_w), plot_y = std::ceil(fr.y);
  float right = plot_x + plot_w + 24 + kPad;
  fr.bottom_axis(plot_y + plot_h, line_height(kTickSize));
  fr.bottom_label();
  Figure f;
  plot_x += fr.size(f, right, fr.y + kPad);

  emit_value_axis(f, ys, Side::Left, plot_x, plot_y, plot_w, plot_h, true);
  emit_value_axis(f, xs, Side::Bottom, plot_x, plot_y, plot_w, plot_h, false);
  float bin_w = plot_w / s.bins;
  float gap = bin_w >= 5 ? 1.0f : 0.0f;
  for (int b = 0; b < s.bins; ++b) {
    if (bins.counts[b] == 0) continue;
    float h = static_cast<float>(ys.frac(static_cast<double>(bins.counts[b]))) * plot_h;
    put_rect(f, plot_x + b * bin_w, plot_y + plot_h - h, bin_w - gap, h, kBarColor);
  }
  put_line(f, plot_x, plot_y + plot_h, plot_x + plot_w, plot_y + plot_h, kAxisColor, 1);
  put_line(f, plot_x, plot_y, plot_x, plot_y + plot_h, kAxisColor, 1);

  fr.draw_head(f);
  fr.draw_left_label(f, plot_y + plot_h / 2, plot_h);
  fr.draw_bottom_label(f, plot_x + plot_w / 2, plot_w + 60);
  return f;
}

}  // namespace mnemo::viz
