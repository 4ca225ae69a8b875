// make_bars (viz/charts.h): bars along a category axis, vertical or horizontal, with their
// values, a value axis with gridlines and an optional dashed reference line.
#include <algorithm>
#include <cmath>

#include "viz/chart_frame.h"
#include "viz/charts.h"

namespace mnemo::viz {
namespace chart {
namespace {

constexpr Rgb kReferenceColor{214, 39, 40};
constexpr float kBarValueSize = 10;

void check_bars(const BarSpec& s) {
  const std::string kSpec = "BarSpec.";
  const size_t n = s.values.size();
  if (n == 0) fail(kSpec + "values", "is empty");
  if (!s.labels.empty() && s.labels.size() != n)
    fail(kSpec + "labels", "has " + std::to_string(s.labels.size()) +
                               " entries, expected 0 or values.size() = " + std::to_string(n));
  if (s.colors.size() > 1 && s.colors.size() != n)
    fail(kSpec + "colors", "has " + std::to_string(s.colors.size()) +
                               " entries, expected 0, 1 or values.size() = " + std::to_string(n));
  if (s.reference_line && !std::isfinite(*s.reference_line))
    fail(kSpec + "reference_line", "must be finite");
}

// How the values are printed at the bar ends: horizontal when they fit, else rotated
// (vertical bars), else not at all; extent: the room they need past a bar's end.
struct BarValueLabels {
  std::vector<std::string> text;
  bool on = false, rotated = false;
  float extent = 0;
};

BarValueLabels bar_value_labels(const BarSpec& s, float pitch) {
  const size_t n = s.values.size();
  const bool horiz = s.horizontal;
  BarValueLabels v;
  v.text.resize(n);
  for (size_t i = 0; i < n; ++i) v.text[i] = format_value(s.values[i]);
  float vl_w = max_width(v.text, kBarValueSize);
  v.on = s.show_values;
  if (v.on && !horiz && vl_w > pitch - 2) {
    if (pitch >= kBarValueSize * kLabelPitch) v.rotated = true;
    else v.on = false;
  }
  if (v.on && horiz && pitch < kBarValueSize * kLabelPitch) v.on = false;
  v.extent = !v.on      ? 0
             : horiz    ? vl_w + 12
             : v.rotated ? vl_w + 8
                        : line_height(kBarValueSize) + 3;
  return v;
}

// The value axis: its range always includes 0 (and the reference line), grown by whole
// steps until every printed value fits inside the plot (val_len px long).
Scale bar_value_scale(const BarSpec& s, const BarValueLabels& vl, float val_len) {
  double lo = 0, hi = 0;
  for (float v : s.values)
    if (std::isfinite(v)) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
  if (s.reference_line) {
    lo = std::min(lo, static_cast<double>(*s.reference_line));
    hi = std::max(hi, static_cast<double>(*s.reference_line));
  }
  if (hi == lo) hi = lo + 1;
  Scale vs = linear_scale(lo, hi, s.horizontal ? 7 : 6, true);
  for (int iter = 0; iter < 8 && vl.on; ++iter) {
    double span = vs.hi - vs.lo;
    bool grow_hi = false, grow_lo = false;
    for (float v : s.values) {
      if (!std::isfinite(v)) continue;
      if (v >= 0 && (vs.hi - v) / span * val_len < vl.extent) grow_hi = true;
      if (v < 0 && (v - vs.lo) / span * val_len < vl.extent) grow_lo = true;
    }
    if (!grow_hi && !grow_lo) break;
    if (grow_hi) vs.hi += vs.step;
    if (grow_lo) vs.lo -= vs.step;
    fill_ticks(vs);
  }
  return vs;
}

// Bar i's value at its end (p: the end, in px along the value axis; cc: the bar's centre).
void emit_bar_value(Figure& f, const BarValueLabels& vl, bool horiz, float v, float p, float cc, size_t i) {
  const float vsize = kBarValueSize;
  if (horiz) {
    if (v >= 0)
      put_text(f, p + 4, cc + vsize * kCapHeight / 2, vl.text[i], vsize, kMuted, Anchor::Start);
    else
      put_text(f, p - 4, cc + vsize * kCapHeight / 2, vl.text[i], vsize, kMuted, Anchor::End);
  } else if (vl.rotated) {
    if (v >= 0)
      put_text(f, cc + vsize * kCapHeight / 2, p - 4, vl.text[i], vsize, kMuted, Anchor::Start, -90);
    else
      put_text(f, cc + vsize * kCapHeight / 2, p + 4, vl.text[i], vsize, kMuted, Anchor::End, -90);
  } else {
    if (v >= 0) put_text(f, cc, p - 4, vl.text[i], vsize, kMuted, Anchor::Middle);
    else put_text(f, cc, p + 4 + vsize * kAscent, vl.text[i], vsize, kMuted, Anchor::Middle);
  }
}

}  // namespace
}  // namespace chart

Figure make_bars(const BarSpec& s) {
  using namespace chart;
  check_bars(s);
  const size_t n = s.values.size();
  std::vector<std::string> labels = s.labels;
  if (labels.empty())
    for (size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));

  const bool horiz = s.horizontal;
  // Category pitch and value-axis length.
  float pitch = horiz ? (n * 24.0f <= 1400 ? std::max(24.0f, 160.0f / n) : 1400.0f / n)
                      : (n * 40.0f <= 2000 ? std::max(40.0f, 360.0f / n) : 2000.0f / n);
  const float cat_len = pitch * n;
  const float val_len = horiz ? 420.0f : 280.0f;
  const float bar_thick = std::min(pitch * 0.72f, 56.0f);

  const BarValueLabels vl = bar_value_labels(s, pitch);
  const Scale vs = bar_value_scale(s, vl, val_len);
  float tick_w = max_width(vs.labels, kTickSize);
  std::string ref_text = s.reference_line ? format_value(*s.reference_line) : std::string();
  float ref_w = s.reference_line ? text_width(ref_text, kTickSize) : 0;
  CategoryLabels cl = layout_categories(labels, pitch, !horiz);

  // x_label names the category axis, y_label the value axis, in both orientations.
  const std::string cat_label = with_thinning_note(s.x_label, cl.step);  // a thinned axis says so
  Frame fr(s.title, horiz ? cat_label : s.y_label, horiz ? s.y_label : cat_label);
  fr.head(10);
  if (horiz && s.reference_line) fr.y += line_height(kTickSize);  // room for the reference label
  fr.left_label();
  float plot_x = fr.left_axis(horiz ? cl.extent : tick_w);
  const float plot_w = horiz ? val_len : cat_len;
  const float plot_y = std::ceil(fr.y);
  const float plot_h = horiz ? cat_len : val_len;
  float right = plot_x + plot_w + (s.reference_line ? 6 + ref_w : 0) + kPad;
  if (horiz && s.reference_line) right = plot_x + plot_w + kPad + ref_w / 2;
  fr.bottom_axis(plot_y + plot_h, horiz ? line_height(kTickSize) : cl.extent);
  fr.bottom_label();
  Figure f;
  plot_x += fr.size(f, right, fr.y + kPad);

  auto val_pos = [&](double v) {
    double frac = vs.frac(v);
    return horiz ? plot_x + static_cast<float>(frac) * plot_w
                 : plot_y + plot_h - static_cast<float>(frac) * plot_h;
  };
  emit_value_axis(f, vs, horiz ? Side::Bottom : Side::Left, plot_x, plot_y, plot_w, plot_h, true);

  float zero = std::round(val_pos(0.0) * 2) / 2;
  for (size_t i = 0; i < n; ++i) {
    float v = s.values[i];
    float c0 = (horiz ? plot_y : plot_x) + pitch * i + (pitch - bar_thick) / 2;
    float cc = (horiz ? plot_y : plot_x) + pitch * (i + 0.5f);
    Rgb color = s.colors.empty() ? kBarColor : s.colors.size() == 1 ? s.colors[0] : s.colors[i];
    if (!std::isfinite(v)) {
      if (horiz)
        put_text(f, zero + 4, cc + kTickSize * kCapHeight / 2, vl.text[i], kTickSize, kNanColor, Anchor::Start, 0,
                 true);
      else
        put_text(f, cc, zero - 4, vl.text[i], kTickSize, kNanColor, Anchor::Middle, 0, true);
      continue;
    }
    float p = val_pos(v);
    if (horiz) put_rect(f, std::min(zero, p), c0, std::fabs(p - zero), bar_thick, color);
    else put_rect(f, c0, std::min(zero, p), bar_thick, std::fabs(p - zero), color);
    if (vl.on) emit_bar_value(f, vl, horiz, v, p, cc, i);
  }
  // Zero line and the category axis line.
  if (horiz) put_line(f, zero, plot_y, zero, plot_y + plot_h, kAxisColor, 1);
  else put_line(f, plot_x, zero, plot_x + plot_w, zero, kAxisColor, 1);
  if (horiz) put_line(f, plot_x, plot_y + plot_h, plot_x + plot_w, plot_y + plot_h, kAxisColor, 1);
  else put_line(f, plot_x, plot_y, plot_x, plot_y + plot_h, kAxisColor, 1);

  if (s.reference_line) {
    float p = std::round(val_pos(*s.reference_line) * 2) / 2;
    if (horiz) {
      put_line(f, p, plot_y, p, plot_y + plot_h, kReferenceColor, 1.5f, true);
      put_text(f, p, plot_y - 4, ref_text, kTickSize, kReferenceColor, Anchor::Middle);
    } else {
      put_line(f, plot_x, p, plot_x + plot_w, p, kReferenceColor, 1.5f, true);
      put_text(f, plot_x + plot_w + 6, p + kTickSize * kCapHeight / 2, ref_text, kTickSize, kReferenceColor,
               Anchor::Start);
    }
  }

  if (horiz) emit_categories(f, cl, Side::Left, plot_y, pitch, plot_x, plot_x - kTickLength - 3);
  else emit_categories(f, cl, Side::Bottom, plot_x, pitch, plot_y + plot_h, plot_y + plot_h + kTickLength + 3);

  fr.draw_head(f);
  fr.draw_left_label(f, plot_y + plot_h / 2, plot_h);
  fr.draw_bottom_label(f, plot_x + plot_w / 2, f.width - 2 * kPad);
  return f;
}

}  // namespace mnemo::viz
