#include "viz/chart_frame.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "viz/charts.h"

namespace mnemo::viz {
namespace chart {
namespace {

std::string format_decade(int k) {
  if (k >= -3 && k <= 4) {
    char buf[32];
    if (k >= 0) std::snprintf(buf, sizeof buf, "%.0f", std::pow(10.0, k));
    else std::snprintf(buf, sizeof buf, "%.*f", -k, std::pow(10.0, k));
    return buf;
  }
  return "1e" + std::to_string(k);
}

double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double nice = norm <= 1.0 + 1e-9 ? 1 : norm <= 2.0 + 1e-9 ? 2 : norm <= 5.0 + 1e-9 ? 5 : 10;
  return nice * mag;
}

}  // namespace

// ---- text --------------------------------------------------------------------------------

float line_height(float size) { return size * (kAscent + kDescent); }

std::string fit_label(const std::string& raw, float size, float max_w, bool bold) {
  std::string s = sanitize_text(raw);
  if (text_width(s, size, bold) <= max_w) return s;
  std::vector<size_t> starts;
  size_t i = 0;
  char32_t cp = 0;
  while (i < s.size()) {
    starts.push_back(i);
    decode_utf8(s, i, cp);
  }
  size_t lo = 0, hi = starts.size();  // number of code points kept
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    if (text_width(s.substr(0, starts[mid]) + "\u2026", size, bold) <= max_w) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0) return "\u2026";
  return s.substr(0, starts[lo]) + "\u2026";
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (std::fabs(v) >= 1000 && std::fabs(v) < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  std::string s = buf;
  if (s == "-0") s = "0";
  return s;
}

float max_width(const std::vector<std::string>& labels, float size, bool bold) {
  float w = 0;
  for (const auto& l : labels) w = std::max(w, text_width(l, size, bold));
  return w;
}

float ceil_px(float v) { return std::ceil(v - 1e-3f); }

void fail(const std::string& field, const std::string& why) { throw std::invalid_argument(field + ": " + why); }

// ---- value scales ------------------------------------------------------------------------

double Scale::frac(double v) const {
  double u = log ? std::log10(v) : v;
  return (u - lo) / (hi - lo);
}

double choose_step(double lo, double hi, int max_count, bool expand) {
  max_count = std::max(2, max_count);
  double step = nice_step((hi - lo) / (max_count - 1)) / 10;
  for (int iter = 0; iter < 12; ++iter) {
    double a = expand ? std::floor(lo / step + 1e-9) : std::ceil(lo / step - 1e-9);
    double b = expand ? std::ceil(hi / step - 1e-9) : std::floor(hi / step + 1e-9);
    if (b - a + 1 <= max_count) return step;
    double mag = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    double m = step / mag;
    step = (m < 1.5 ? 2 : m < 3.5 ? 5 : 10) * mag;
  }
  return step;
}

void fill_ticks(Scale& s) {
  s.ticks.clear();
  s.labels.clear();
  double first = std::ceil(s.lo / s.step - 1e-9);
  for (double k = first;; k += 1) {
    double v = k * s.step;
    if (v > s.hi + s.step * 1e-9) break;
    if (std::fabs(v) < s.step * 1e-9) v = 0;
    s.ticks.push_back(v);
    s.labels.push_back(s.log ? format_decade(static_cast<int>(std::lround(v)))
                             : format_tick(v, s.step));
    if (s.ticks.size() > 1000) break;
  }
}

Scale linear_scale(double lo, double hi, int max_ticks, bool expand) {
  Scale s;
  if (!(hi > lo)) {
    double c = std::isfinite(lo) ? lo : 0.0;
    double half = c == 0 ? 0.5 : std::fabs(c) * 0.1;
    lo = c - half;
    hi = c + half;
  }
  s.step = choose_step(lo, hi, max_ticks, expand);
  if (expand) {
    lo = std::floor(lo / s.step + 1e-9) * s.step;
    hi = std::ceil(hi / s.step - 1e-9) * s.step;
  }
  s.lo = lo;
  s.hi = hi;
  fill_ticks(s);
  return s;
}

Scale log_scale(double lo, double hi, int max_ticks) {
  Scale s;
  s.log = true;
  int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (d1 <= d0) d1 = d0 + 1;
  s.lo = d0;
  s.hi = d1;
  int span = d1 - d0;
  s.step = std::max(1, (span + max_ticks - 2) / std::max(1, max_ticks - 1));
  fill_ticks(s);
  return s;
}

// ---- axes --------------------------------------------------------------------------------

void emit_value_axis(Figure& f, const Scale& s, Side side, float px, float py, float pw, float ph, bool grid) {
  for (size_t i = 0; i < s.ticks.size(); ++i) {
    const double fr = s.frac(s.log ? std::pow(10.0, s.ticks[i]) : s.ticks[i]);
    if (side == Side::Bottom) {
      float x = px + pw * static_cast<float>(fr);
      x = std::round(x * 2) / 2;
      if (grid) put_line(f, x, py, x, py + ph, kGridColor, 1);
      put_line(f, x, py + ph, x, py + ph + kTickLength, kAxisColor, 1);
      put_text(f, x, py + ph + kTickLength + 3 + kTickSize * kAscent, s.labels[i], kTickSize, kInk, Anchor::Middle);
      continue;
    }
    float y = py + ph * static_cast<float>(1.0 - fr);
    y = std::round(y * 2) / 2;
    if (grid) put_line(f, px, y, px + pw, y, kGridColor, 1);
    if (side == Side::Left) {
      put_line(f, px - kTickLength, y, px, y, kAxisColor, 1);
      put_text(f, px - kTickLength - 3, y + kTickSize * kCapHeight / 2, s.labels[i], kTickSize, kInk, Anchor::End);
    } else {
      put_line(f, px + pw, y, px + pw + kTickLength, y, kAxisColor, 1);
      put_text(f, px + pw + kTickLength + 3, y + kTickSize * kCapHeight / 2, s.labels[i], kTickSize, kInk,
               Anchor::Start);
    }
  }
}

CategoryLabels layout_categories(const std::vector<std::string>& raw, float pitch, bool horizontal_axis, int keep) {
  CategoryLabels c;
  size_t n = raw.size();
  c.text.assign(n, std::string());
  if (n == 0) return c;
  std::vector<std::string> fitted(n);
  for (size_t i = 0; i < n; ++i) fitted[i] = fit_label(raw[i], kTickSize, kMaxLabelWidth);
  if (horizontal_axis) {
    bool fits = max_width(fitted, kTickSize) <= pitch - 3;
    if (fits) {
      c.text = fitted;
      c.extent = line_height(kTickSize);
      return c;
    }
    // Short labels (byte tokens) that fit upright at a smaller, still legible size keep every
    // category: upright text needs its width per cell, rotated text its line height.
    const float upright = kTickSize * (pitch - 3) / std::max(max_width(fitted, kTickSize), 1e-3f);
    if (upright >= kMinLabelSize && upright * kLabelPitch > pitch) {
      c.size = std::floor(upright * 2) / 2;
      for (size_t i = 0; i < n; ++i) c.text[i] = fit_label(raw[i], c.size, kMaxLabelWidth);
      c.extent = line_height(c.size);
      return c;
    }
    c.rotated = true;
  }
  c.size = std::clamp(pitch / kLabelPitch, kMinLabelSize, kTickSize);
  int step = std::max(1, static_cast<int>(std::ceil(c.size * kLabelPitch / pitch - 1e-4)));
  c.step = step;
  const int last = static_cast<int>(n) - 1;
  for (size_t i = 0; i < n; ++i) {
    bool show = static_cast<int>(i) % step == 0;
    if (keep >= 0 && static_cast<int>(i) != keep && std::abs(static_cast<int>(i) - keep) < step)
      show = false;
    // The last label is always drawn (a thinned axis would otherwise drop the last token);
    // its neighbours within a step make room for it.
    if (horizontal_axis && static_cast<int>(i) != last && last - static_cast<int>(i) < step && static_cast<int>(i) != keep)
      show = false;
    if (horizontal_axis && static_cast<int>(i) == last && (keep < 0 || last - keep >= step)) show = true;
    if (static_cast<int>(i) == keep) show = true;
    if (show) c.text[i] = fit_label(raw[i], c.size, kMaxLabelWidth, static_cast<int>(i) == keep);
  }
  float w = 0;
  for (size_t i = 0; i < n; ++i)
    if (!c.text[i].empty())
      w = std::max(w, text_width(c.text[i], c.size, static_cast<int>(i) == keep));
  c.extent = c.rotated || !horizontal_axis ? w : line_height(c.size);
  return c;
}

void emit_categories(Figure& f, const CategoryLabels& c, Side side, float start, float pitch, float axis,
                     float label_pos, int bold) {
  for (size_t i = 0; i < c.text.size(); ++i) {
    if (c.text[i].empty()) continue;
    const float cc = start + pitch * (i + 0.5f);
    if (side == Side::Left) {
      put_line(f, axis - kTickLength, cc, axis, cc, kAxisColor, 1);
      put_text(f, label_pos, cc + c.size * kCapHeight / 2, c.text[i], c.size, kInk, Anchor::End, 0,
               static_cast<int>(i) == bold);
    } else {
      put_line(f, cc, axis, cc, axis + kTickLength, kAxisColor, 1);
      if (c.rotated)
        put_text(f, cc + c.size * kCapHeight / 2, label_pos, c.text[i], c.size, kInk, Anchor::End, -90);
      else
        put_text(f, cc, label_pos + c.size * kAscent, c.text[i], c.size, kInk, Anchor::Middle);
    }
  }
}

// ---- the frame ---------------------------------------------------------------------------

Frame::Frame(std::string title, std::string left_label, std::string bottom_label)
    : title_(std::move(title)), left_(std::move(left_label)), bottom_(std::move(bottom_label)) {}

void Frame::head(float gap, std::string subtitle) {
  if (!title_.empty()) {
    title_base_ = y + kTitleSize * kAscent;
    y += line_height(kTitleSize) + gap;
  }
  subtitle_ = std::move(subtitle);
  if (!subtitle_.empty()) {
    subtitle_base_ = y + kSubtitleSize * kAscent;
    y += line_height(kSubtitleSize) + 10;
  }
}

void Frame::left_label() {
  if (left_.empty()) return;
  left_x_ = x + kAxisLabelSize * kAscent;
  x += line_height(kAxisLabelSize) + 6;
}

float Frame::left_axis(float extent) {
  x += extent + kTickLength + 3;
  return std::ceil(x);
}

void Frame::bottom_axis(float plot_bottom, float extent) { y = plot_bottom + kTickLength + 3 + extent; }

void Frame::bottom_label() {
  if (bottom_.empty()) return;
  y += 8;
  bottom_base_ = y + kAxisLabelSize * kAscent;
  y += line_height(kAxisLabelSize);
}

float Frame::size(Figure& f, float right, float bottom) {
  const float head_w = std::max(title_.empty() ? 0 : text_width(title_, kTitleSize, true),
                                subtitle_.empty() ? 0 : text_width(subtitle_, kSubtitleSize));
  f.width = ceil_px(std::max(right, head_w + 2 * kPad));
  f.height = ceil_px(bottom);
  const float ox = std::floor((f.width - right) / 2);
  left_x_ += ox;
  return ox;
}

void Frame::draw_head(Figure& f) const {
  put_text(f, f.width / 2, title_base_, sanitize_text(title_), kTitleSize, kInk, Anchor::Middle, 0, true);
  put_text(f, f.width / 2, subtitle_base_, subtitle_, kSubtitleSize, kMuted, Anchor::Middle);
}

void Frame::draw_left_label(Figure& f, float cy, float room) const {
  if (left_.empty()) return;
  put_text(f, left_x_, cy, fit_label(left_, kAxisLabelSize, room), kAxisLabelSize, kInk, Anchor::Middle, -90);
}

void Frame::draw_bottom_label(Figure& f, float cx, float room) const {
  if (bottom_.empty()) return;
  put_text(f, cx, bottom_base_, fit_label(bottom_, kAxisLabelSize, room), kAxisLabelSize, kInk, Anchor::Middle);
}

}  // namespace chart

std::string ordinal(int n) {
  const int mod100 = std::abs(n) % 100, mod10 = std::abs(n) % 10;
  const char* suffix = (mod100 >= 11 && mod100 <= 13) ? "th"
                       : mod10 == 1                   ? "st"
                       : mod10 == 2                   ? "nd"
                       : mod10 == 3                   ? "rd"
                                                      : "th";
  return std::to_string(n) + suffix;
}

std::string thinning_note(int step) { return step <= 1 ? std::string() : "every " + ordinal(step) + " label shown"; }

std::string with_thinning_note(const std::string& label, int step) {
  const std::string note = thinning_note(step);
  if (note.empty()) return label;
  if (label.empty()) return note;
  return label + "  (" + note + ")";
}

// ---- ticks (viz/charts.h) ----------------------------------------------------------------

std::vector<double> nice_ticks(double lo, double hi, int max_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!(hi > lo)) return {lo};
  chart::Scale s;
  s.lo = lo;
  s.hi = hi;
  s.step = chart::choose_step(lo, hi, max_count, false);
  chart::fill_ticks(s);
  return s.ticks;
}

double tick_step(const std::vector<double>& ticks, double lo, double hi) {
  if (ticks.size() > 1) return ticks[1] - ticks[0];
  return hi > lo ? hi - lo : 1.0;
}

std::string format_tick(double v, double step) {
  char buf[64];
  if (step > 0 && step >= 1e-4 && std::fabs(v) < 1e7) {
    int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  std::string s = buf;
  bool zero = true;
  for (char c : s)
    if (c != '-' && c != '0' && c != '.') zero = false;
  if (zero) {
    if (!s.empty() && s[0] == '-') s.erase(0, 1);
  }
  return s;
}

std::string format_log_tick(double exponent) {
  const double k = std::round(exponent);
  if (std::fabs(exponent - k) < 1e-9) return chart::format_decade(static_cast<int>(k));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", std::pow(10.0, exponent));
  return buf;
}

}  // namespace mnemo::viz
