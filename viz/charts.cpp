#include "viz/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace mnemo::viz {
namespace {

constexpr Rgb kInk{25, 25, 25};
constexpr Rgb kMuted{95, 95, 95};
constexpr Rgb kAxisColor{70, 70, 70};
constexpr Rgb kGridColor{226, 226, 226};
constexpr Rgb kMarkerColor{120, 120, 120};  // vertical markers of line charts
constexpr Rgb kDefaultBar{76, 114, 176};
constexpr Rgb kReferenceColor{214, 39, 40};
constexpr Rgb kBadPointColor{220, 0, 0};

constexpr float kPad = 14;
constexpr float kTitleSize = 15;
constexpr float kSubtitleSize = 11;
constexpr float kAxisLabelSize = 12;
constexpr float kTickSize = 11;
constexpr float kMinLabelSize = 9;      // nothing smaller is ever drawn
constexpr float kLabelPitch = 1.15f;    // min label spacing, in em
constexpr float kMaxLabelWidth = 150;   // longer labels are cut with an ellipsis
constexpr float kMaxMapSize = 2100;     // heatmap cell area limit per direction
constexpr float kTickLength = 4;

// ---- small emit helpers ----------------------------------------------------------------

float line_height(float size) { return size * (kAscent + kDescent); }

// Sanitised label, cut at a code point boundary with "…" so it is at most max_w wide.
std::string fit_label(const std::string& raw, float size, float max_w, bool bold = false) {
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

// Smallest 1/2/5 x 10^k step that puts at most max_count ticks on [lo, hi] (after rounding
// the ends out to whole steps when expand).
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

// A linear (or log10) value axis: [lo, hi] maps to frac 0..1; ticks inside [lo, hi].
struct Scale {
  double lo = 0, hi = 1, step = 1;
  bool log = false;  // then lo / hi / ticks are decades (exponents)
  std::vector<double> ticks;
  std::vector<std::string> labels;

  double frac(double v) const {
    double u = log ? std::log10(v) : v;
    return (u - lo) / (hi - lo);
  }
};

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

// Linear scale covering [lo, hi]; expand = round the ends out to whole steps.
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

// log10 scale over whole decades covering [lo, hi] (both > 0).
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

float max_width(const std::vector<std::string>& labels, float size, bool bold = false) {
  float w = 0;
  for (const auto& l : labels) w = std::max(w, text_width(l, size, bold));
  return w;
}

// Gridlines + ticks + tick labels for a vertical value axis on the left of the plot.
void emit_left_axis(Figure& f, const Scale& s, float px, float py, float pw, float ph,
                    bool grid) {
  for (size_t i = 0; i < s.ticks.size(); ++i) {
    float y = py + ph * static_cast<float>(1.0 - s.frac(s.log ? std::pow(10.0, s.ticks[i])
                                                               : s.ticks[i]));
    y = std::round(y * 2) / 2;
    if (grid) put_line(f, px, y, px + pw, y, kGridColor, 1);
    put_line(f, px - kTickLength, y, px, y, kAxisColor, 1);
    put_text(f, px - kTickLength - 3, y + kTickSize * kCapHeight / 2, s.labels[i], kTickSize,
             kInk, Anchor::End);
  }
}

// Gridlines + ticks + tick labels for a horizontal value axis below the plot.
void emit_bottom_axis(Figure& f, const Scale& s, float px, float py, float pw, float ph,
                      bool grid) {
  for (size_t i = 0; i < s.ticks.size(); ++i) {
    float x = px + pw * static_cast<float>(s.frac(s.log ? std::pow(10.0, s.ticks[i])
                                                         : s.ticks[i]));
    x = std::round(x * 2) / 2;
    if (grid) put_line(f, x, py, x, py + ph, kGridColor, 1);
    put_line(f, x, py + ph, x, py + ph + kTickLength, kAxisColor, 1);
    put_text(f, x, py + ph + kTickLength + 3 + kTickSize * kAscent, s.labels[i], kTickSize, kInk,
             Anchor::Middle);
  }
}

// Category labels along one axis: which to show, at what size, rotated or not.
struct CategoryLabels {
  std::vector<std::string> text;  // fitted; empty string = not shown
  float size = kTickSize;
  bool rotated = false;
  float extent = 0;  // px the labels need away from the axis
};

// pitch: px between neighbouring categories. horizontal_axis: labels sit below the plot
// (may rotate); otherwise they sit left of it (never rotate, thin instead).
CategoryLabels layout_categories(const std::vector<std::string>& raw, float pitch,
                                 bool horizontal_axis, int keep = -1) {
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
    c.rotated = true;
  }
  c.size = std::clamp(pitch / kLabelPitch, kMinLabelSize, kTickSize);
  int step = std::max(1, static_cast<int>(std::ceil(c.size * kLabelPitch / pitch - 1e-4)));
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

[[noreturn]] void fail(const std::string& field, const std::string& why) {
  throw std::invalid_argument(field + ": " + why);
}

float ceil_px(float v) { return std::ceil(v - 1e-3f); }

}  // namespace

// ---- ticks -------------------------------------------------------------------------------

std::vector<double> nice_ticks(double lo, double hi, int max_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!(hi > lo)) return {lo};
  Scale s;
  s.lo = lo;
  s.hi = hi;
  s.step = choose_step(lo, hi, max_count, false);
  fill_ticks(s);
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

// ---- token labels ------------------------------------------------------------------------

std::string token_label(std::string_view bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  auto escape = [&](std::string& out, unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  bool have_font = font_available();
  auto drawable = [&](char32_t cp) {
    if (cp <= 0xA0 || cp == 0xAD) return false;
    if (cp >= 0x300 && cp <= 0x36F) return false;
    if (cp >= 0x2000 && cp <= 0x200F) return false;
    if (cp >= 0x2028 && cp <= 0x202F) return false;
    if (cp >= 0x205F && cp <= 0x206F) return false;
    if (cp == 0xFEFF || cp == 0x2423 || cp == 0x21B5) return false;
    if (cp >= 0xFE00 && cp <= 0xFE0F) return false;
    if (have_font) return font_has_glyph(cp);
    return (cp >= 0xA1 && cp <= 0x24F) || (cp >= 0x370 && cp <= 0x4FF);
  };
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      if (c == ' ') out += "\u2423";
      else if (c == '\n') out += "\u21B5";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7F) escape(out, c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t start = i;
    char32_t cp = 0;
    bool ok = decode_utf8(bytes, i, cp);
    if (ok && drawable(cp)) {
      out.append(bytes.data() + start, i - start);
    } else {
      for (size_t k = start; k < i; ++k) escape(out, static_cast<unsigned char>(bytes[k]));
    }
  }
  return out;
}

// ---- heatmap -----------------------------------------------------------------------------

Figure make_heatmap(const HeatmapSpec& s) {
  const std::string kSpec = "HeatmapSpec.";
  if (s.rows <= 0) fail(kSpec + "rows", "must be > 0 (got " + std::to_string(s.rows) + ")");
  if (s.cols <= 0) fail(kSpec + "cols", "must be > 0 (got " + std::to_string(s.cols) + ")");
  const size_t rows = static_cast<size_t>(s.rows), cols = static_cast<size_t>(s.cols);
  if (s.values.size() != rows * cols)
    fail(kSpec + "values", "has " + std::to_string(s.values.size()) + " entries, rows*cols = " +
                               std::to_string(rows * cols));
  if (!s.row_labels.empty() && s.row_labels.size() != rows)
    fail(kSpec + "row_labels", "has " + std::to_string(s.row_labels.size()) +
                                   " entries, expected 0 or rows = " + std::to_string(rows));
  if (!s.col_labels.empty() && s.col_labels.size() != cols)
    fail(kSpec + "col_labels", "has " + std::to_string(s.col_labels.size()) +
                                   " entries, expected 0 or cols = " + std::to_string(cols));
  if (!(s.cell > 0) || !std::isfinite(s.cell)) fail(kSpec + "cell", "must be a finite size > 0");
  if (std::isinf(s.vmin)) fail(kSpec + "vmin", "must be finite, or NaN for auto");
  if (std::isinf(s.vmax)) fail(kSpec + "vmax", "must be finite, or NaN for auto");
  if (!std::isnan(s.vmin) && !std::isnan(s.vmax) && s.vmin > s.vmax)
    fail(kSpec + "vmin", "is greater than vmax");
  for (int idx : s.col_separators)
    if (idx < 0 || idx > s.cols)
      fail(kSpec + "col_separators", "index " + std::to_string(idx) + " outside 0.." +
                                         std::to_string(s.cols));
  for (int idx : s.row_separators)
    if (idx < 0 || idx > s.rows)
      fail(kSpec + "row_separators", "index " + std::to_string(idx) + " outside 0.." +
                                         std::to_string(s.rows));
  for (const auto& g : s.col_groups)
    if (g.first < 0 || g.first >= s.cols)
      fail(kSpec + "col_groups", "first column " + std::to_string(g.first) + " outside 0.." +
                                     std::to_string(s.cols - 1));
  if (s.highlight_row < -1 || s.highlight_row >= s.rows)
    fail(kSpec + "highlight_row", "must be -1 or a row index < " + std::to_string(s.rows));

  // Value range.
  float dmin = std::numeric_limits<float>::infinity(), dmax = -dmin;
  size_t non_finite = 0;
  for (float v : s.values) {
    if (std::isfinite(v)) {
      dmin = std::min(dmin, v);
      dmax = std::max(dmax, v);
    } else {
      ++non_finite;
    }
  }
  bool any_finite = dmin <= dmax;
  double vmin = std::isnan(s.vmin) ? (any_finite ? dmin : 0.0) : s.vmin;
  double vmax = std::isnan(s.vmax) ? (any_finite ? dmax : 1.0) : s.vmax;
  if (s.cmap == Colormap::Diverging && std::isnan(s.vmin) && std::isnan(s.vmax) && any_finite) {
    double m = std::max(std::fabs(static_cast<double>(dmin)), std::fabs(static_cast<double>(dmax)));
    vmin = -m;  // symmetric, so the white centre means 0
    vmax = m;
  }
  if (vmin > vmax) {  // only one end given, and the data lie on the other side of it
    if (std::isnan(s.vmin)) vmin = vmax - 1;
    else vmax = vmin + 1;
  }
  if (vmax == vmin) {
    vmin -= 0.5;
    vmax += 0.5;
  }

  // Cell size.
  auto snap = [](float c) { return c >= 1 ? std::floor(c * 2) / 2 : c; };
  // A direction that fits keeps `cell`; when both must shrink the cells stay square.
  float cw = s.cell, ch = s.cell;
  bool shrink_w = cols * cw > kMaxMapSize, shrink_h = rows * ch > kMaxMapSize;
  if (shrink_w && shrink_h) cw = ch = kMaxMapSize / std::max(rows, cols);
  else if (shrink_w) cw = kMaxMapSize / cols;
  else if (shrink_h) ch = kMaxMapSize / rows;
  cw = snap(cw);
  ch = snap(ch);
  const float map_w = cols * cw, map_h = rows * ch;

  // Labels.
  CategoryLabels rlab = layout_categories(s.row_labels, ch, false, s.highlight_row);
  CategoryLabels clab = layout_categories(s.col_labels, cw, true);

  // Colorbar ticks (need the bar height).
  const float cb_w = 14;
  const float cb_h = std::max(map_h, 120.0f);
  int max_cb_ticks = std::clamp(static_cast<int>(cb_h / (kTickSize * 2.4f)) + 1, 2, 11);
  Scale cb_scale = linear_scale(vmin, vmax, max_cb_ticks, false);
  float cb_tick_w = max_width(cb_scale.labels, kTickSize);
  const std::string kNanLegend = "NaN/Inf";
  float nan_legend_w = non_finite ? 12 + 5 + text_width(kNanLegend, kTickSize) : 0;

  // Horizontal layout (local x, shifted by ox at the end).
  float x = kPad;
  float ylab_x = 0;
  if (!s.y_label.empty()) {
    ylab_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize) + 6;
  }
  float row_label_right = 0;
  if (rlab.extent > 0) {
    x += rlab.extent + kTickLength + 3;
    row_label_right = x - kTickLength - 3;
  }
  float map_x = std::ceil(x);
  float cb_x = map_x + map_w + 16;
  float cb_right = std::max(cb_x + cb_w + kTickLength + 3 + cb_tick_w, cb_x + nan_legend_w);
  x = cb_right;
  float cblab_x = 0;
  if (!s.colorbar_label.empty()) {
    x += 8;
    cblab_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize);
  }
  x += kPad;
  float content_w = x;

  // Vertical layout.
  float y = kPad;
  float title_base = 0;
  if (!s.title.empty()) {
    title_base = y + kTitleSize * kAscent;
    y += line_height(kTitleSize) + 8;
  }
  float group_base = 0;
  if (!s.col_groups.empty()) {
    group_base = y + kTickSize * kAscent;
    y += line_height(kTickSize) + 9;
  }
  float map_y = std::ceil(y);
  y = map_y + map_h;
  float clab_top = y + kTickLength + 3;
  if (clab.extent > 0) y = clab_top + clab.extent;
  float xlab_base = 0;
  if (!s.x_label.empty()) {
    y += 8;
    xlab_base = y + kAxisLabelSize * kAscent;
    y += line_height(kAxisLabelSize);
  }
  float column_bottom = map_y + cb_h + kTickSize * 0.5f;
  float nan_y = map_y + cb_h + 12;
  if (non_finite) column_bottom = nan_y + 12;
  // The y label is centred on the map, or hangs down from its top when longer than it.
  std::string y_label = fit_label(s.y_label, kAxisLabelSize, std::max(map_h, 160.0f));
  float ylab_len = text_width(y_label, kAxisLabelSize);
  float ylab_cy = map_y + std::max(map_h, ylab_len) / 2;
  float content_h = std::max({y, column_bottom, map_y + ylab_len}) + kPad;

  // Title may widen the figure; centre the content under it.
  float title_w = s.title.empty() ? 0 : text_width(s.title, kTitleSize, true);
  Figure f;
  f.width = ceil_px(std::max(content_w, title_w + 2 * kPad));
  f.height = ceil_px(content_h);
  float ox = std::floor((f.width - content_w) / 2);
  map_x += ox;
  cb_x += ox;
  ylab_x += ox;
  row_label_right += ox;
  cblab_x += ox;

  // Cells.
  f.prims.reserve(rows * cols + 64 + 2 * (s.row_labels.size() + s.col_labels.size()) +
                  static_cast<size_t>(cb_h) + 2);
  const double inv = 1.0 / (vmax - vmin);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      float v = s.values[r * cols + c];
      Rgb color = std::isfinite(v) ? sample(s.cmap, static_cast<float>((v - vmin) * inv))
                                   : nan_color(s.cmap);
      put_rect(f, map_x + c * cw, map_y + r * ch, cw, ch, color, std::nullopt, 1.0f, true);
    }
  }

  // Separators, highlight, frame.
  Rgb sep_color = (s.cmap == Colormap::Viridis || s.cmap == Colormap::Magma) ? Rgb{255, 255, 255}
                  : s.cmap == Colormap::Gray                                 ? Rgb{230, 60, 30}
                                                                             : Rgb{20, 20, 20};
  for (int idx : s.col_separators) {
    float sx = map_x + idx * cw;
    put_line(f, sx, map_y, sx, map_y + map_h, sep_color, 1.5f);
    put_line(f, sx, map_y - 5, sx, map_y, kAxisColor, 1.5f);
  }
  for (int idx : s.row_separators) {
    float sy = map_y + idx * ch;
    put_line(f, map_x, sy, map_x + map_w, sy, sep_color, 1.5f);
    put_line(f, map_x + map_w, sy, map_x + map_w + 5, sy, kAxisColor, 1.5f);
  }
  put_rect(f, map_x, map_y, map_w, map_h, std::nullopt, kAxisColor, 1.0f);
  if (s.highlight_row >= 0) {
    float hy = map_y + s.highlight_row * ch;
    put_rect(f, map_x, hy, map_w, ch, std::nullopt, Rgb{255, 255, 255}, 3.0f);
    put_rect(f, map_x, hy, map_w, ch, std::nullopt, Rgb{0, 0, 0}, 1.5f);
  }

  // Column groups: bracket + label above the map.
  if (!s.col_groups.empty()) {
    std::vector<std::pair<int, std::string>> groups = s.col_groups;
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // A label may overhang its span into free space; it is cut where it would run into
    // the previous label or into the next label (assumed centred on its own span).
    auto span = [&](size_t g, float* x0, float* x1) {
      int c0 = groups[g].first;
      int c1 = g + 1 < groups.size() ? groups[g + 1].first : s.cols;
      *x0 = map_x + c0 * cw + 1;
      *x1 = map_x + c1 * cw - 1;
      return c1 > c0;
    };
    float prev_right = -1e9f;
    for (size_t g = 0; g < groups.size(); ++g) {
      float gx0 = 0, gx1 = 0;
      if (!span(g, &gx0, &gx1)) continue;
      float by = map_y - 5;
      put_line(f, gx0, by, gx1, by, kAxisColor, 1);
      put_line(f, gx0, by, gx0, map_y - 1, kAxisColor, 1);
      put_line(f, gx1, by, gx1, map_y - 1, kAxisColor, 1);
      float cx = (gx0 + gx1) / 2;
      float right_limit = map_x + map_w + 12;
      for (size_t h = g + 1; h < groups.size(); ++h) {
        float hx0 = 0, hx1 = 0;
        if (!span(h, &hx0, &hx1)) continue;
        float hw = std::min(text_width(groups[h].second, kTickSize), hx1 - hx0);
        right_limit = (hx0 + hx1) / 2 - hw / 2 - 6;
        break;
      }
      float half = std::min(cx - std::max(prev_right + 6, kPad), right_limit - cx);
      std::string label = fit_label(groups[g].second, kTickSize, std::max(2 * half, 8.0f));
      float lw = text_width(label, kTickSize);
      put_text(f, cx, group_base, label, kTickSize, kInk, Anchor::Middle);
      prev_right = cx + lw / 2;
    }
  }

  // Row labels.
  for (size_t r = 0; r < rows && !rlab.text.empty(); ++r) {
    if (rlab.text[r].empty()) continue;
    float cy = map_y + (r + 0.5f) * ch;
    bool hl = static_cast<int>(r) == s.highlight_row;
    put_line(f, map_x - kTickLength, cy, map_x, cy, kAxisColor, 1);
    put_text(f, row_label_right, cy + rlab.size * kCapHeight / 2, rlab.text[r], rlab.size, kInk,
             Anchor::End, 0, hl);
  }
  // Column labels.
  for (size_t c = 0; c < cols && !clab.text.empty(); ++c) {
    if (clab.text[c].empty()) continue;
    float cx = map_x + (c + 0.5f) * cw;
    put_line(f, cx, map_y + map_h, cx, map_y + map_h + kTickLength, kAxisColor, 1);
    if (clab.rotated)
      put_text(f, cx + clab.size * kCapHeight / 2, clab_top, clab.text[c], clab.size, kInk,
               Anchor::End, -90);
    else
      put_text(f, cx, clab_top + clab.size * kAscent, clab.text[c], clab.size, kInk,
               Anchor::Middle);
  }

  // Title and axis labels.
  put_text(f, f.width / 2, title_base, sanitize_text(s.title), kTitleSize, kInk, Anchor::Middle,
           0, true);
  if (!s.x_label.empty()) {
    float cx = map_x + map_w / 2;
    float room = 2 * std::min(cx - kPad, f.width - kPad - cx);
    if (xlab_base - kAxisLabelSize * kAscent < map_y + cb_h) room = 2 * std::min(cx - kPad, cb_x - 6 - cx);
    put_text(f, cx, xlab_base, fit_label(s.x_label, kAxisLabelSize, std::max(room, 40.0f)),
             kAxisLabelSize, kInk, Anchor::Middle);
  }
  if (!s.y_label.empty())
    put_text(f, ylab_x, ylab_cy, y_label, kAxisLabelSize, kInk, Anchor::Middle, -90);

  // Colorbar: 1 px bands (top = vmax), frame, ticks, label.
  int bands = std::max(2, static_cast<int>(std::lround(cb_h)));
  for (int i = 0; i < bands; ++i) {
    float t = 1.0f - (i + 0.5f) / bands;
    put_rect(f, cb_x, map_y + cb_h * i / bands, cb_w, cb_h / bands, sample(s.cmap, t));
  }
  put_rect(f, cb_x, map_y, cb_w, cb_h, std::nullopt, kAxisColor, 1.0f);
  for (size_t i = 0; i < cb_scale.ticks.size(); ++i) {
    float ty = map_y + cb_h * static_cast<float>(1.0 - cb_scale.frac(cb_scale.ticks[i]));
    ty = std::round(ty * 2) / 2;
    put_line(f, cb_x + cb_w, ty, cb_x + cb_w + kTickLength, ty, kAxisColor, 1);
    put_text(f, cb_x + cb_w + kTickLength + 3, ty + kTickSize * kCapHeight / 2,
             cb_scale.labels[i], kTickSize, kInk, Anchor::Start);
  }
  if (!s.colorbar_label.empty())
    put_text(f, cblab_x, map_y + cb_h / 2,
             fit_label(s.colorbar_label, kAxisLabelSize, cb_h),
             kAxisLabelSize, kInk, Anchor::Middle, -90);
  if (non_finite) {
    put_rect(f, cb_x, nan_y, 12, 12, nan_color(s.cmap), kAxisColor, 1.0f);
    put_text(f, cb_x + 17, nan_y + 6 + kTickSize * kCapHeight / 2, kNanLegend, kTickSize, kInk,
             Anchor::Start);
  }
  return f;
}

// ---- bars --------------------------------------------------------------------------------

Figure make_bars(const BarSpec& s) {
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

  std::vector<std::string> labels = s.labels;
  if (labels.empty())
    for (size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));

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

  const bool horiz = s.horizontal;
  // Category pitch and value-axis length.
  float pitch = horiz ? (n * 24.0f <= 1400 ? std::max(24.0f, 160.0f / n) : 1400.0f / n)
                      : (n * 40.0f <= 2000 ? std::max(40.0f, 360.0f / n) : 2000.0f / n);
  const float cat_len = pitch * n;
  const float val_len = horiz ? 420.0f : 280.0f;
  const float bar_thick = std::min(pitch * 0.72f, 56.0f);

  // Value labels: horizontal when they fit, else rotated (vertical bars), else none.
  std::vector<std::string> vlabels(n);
  for (size_t i = 0; i < n; ++i) vlabels[i] = format_value(s.values[i]);
  const float vsize = 10;
  float vl_w = max_width(vlabels, vsize);
  bool values_on = s.show_values;
  bool values_rotated = false;
  if (values_on && !horiz && vl_w > pitch - 2) {
    if (pitch >= vsize * kLabelPitch) values_rotated = true;
    else values_on = false;
  }
  if (values_on && horiz && pitch < vsize * kLabelPitch) values_on = false;
  float vextent = !values_on ? 0
                  : horiz    ? vl_w + 12
                  : values_rotated ? vl_w + 8
                                   : line_height(vsize) + 3;

  Scale vs = linear_scale(lo, hi, horiz ? 7 : 6, true);
  for (int iter = 0; iter < 8 && values_on; ++iter) {
    double span = vs.hi - vs.lo;
    bool grow_hi = false, grow_lo = false;
    for (float v : s.values) {
      if (!std::isfinite(v)) continue;
      if (v >= 0 && (vs.hi - v) / span * val_len < vextent) grow_hi = true;
      if (v < 0 && (v - vs.lo) / span * val_len < vextent) grow_lo = true;
    }
    if (!grow_hi && !grow_lo) break;
    if (grow_hi) vs.hi += vs.step;
    if (grow_lo) vs.lo -= vs.step;
    fill_ticks(vs);
  }
  float tick_w = max_width(vs.labels, kTickSize);
  std::string ref_text = s.reference_line ? format_value(*s.reference_line) : std::string();
  float ref_w = s.reference_line ? text_width(ref_text, kTickSize) : 0;

  CategoryLabels cl = layout_categories(labels, pitch, !horiz);
  const std::string& cat_label = s.x_label;
  const std::string& val_label = s.y_label;

  Figure f;
  float x = kPad, y = kPad;
  float title_base = 0;
  if (!s.title.empty()) {
    title_base = y + kTitleSize * kAscent;
    y += line_height(kTitleSize) + 10;
  }
  if (horiz && s.reference_line) y += line_height(kTickSize);  // room for the reference label
  float plot_x, plot_y, plot_w, plot_h;
  float left_label_x = 0, bottom_label_base = 0;
  const std::string& left_label = horiz ? cat_label : val_label;
  const std::string& bottom_label = horiz ? val_label : cat_label;
  if (!left_label.empty()) {
    left_label_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize) + 6;
  }
  float left_extent = horiz ? cl.extent : tick_w;
  x += left_extent + kTickLength + 3;
  plot_x = std::ceil(x);
  plot_w = horiz ? val_len : cat_len;
  plot_y = std::ceil(y);
  plot_h = horiz ? cat_len : val_len;
  float right = plot_x + plot_w + (s.reference_line ? 6 + ref_w : 0) + kPad;
  if (horiz && s.reference_line) right = plot_x + plot_w + kPad + ref_w / 2;
  float bottom_extent = horiz ? line_height(kTickSize) : cl.extent;
  y = plot_y + plot_h + kTickLength + 3 + bottom_extent;
  if (!bottom_label.empty()) {
    y += 8;
    bottom_label_base = y + kAxisLabelSize * kAscent;
    y += line_height(kAxisLabelSize);
  }
  float title_w = s.title.empty() ? 0 : text_width(s.title, kTitleSize, true);
  f.width = ceil_px(std::max(right, title_w + 2 * kPad));
  f.height = ceil_px(y + kPad);
  float ox = std::floor((f.width - right) / 2);
  plot_x += ox;
  left_label_x += ox;

  auto val_pos = [&](double v) {
    double fr = vs.frac(v);
    return horiz ? plot_x + static_cast<float>(fr) * plot_w
                 : plot_y + plot_h - static_cast<float>(fr) * plot_h;
  };
  if (horiz) emit_bottom_axis(f, vs, plot_x, plot_y, plot_w, plot_h, true);
  else emit_left_axis(f, vs, plot_x, plot_y, plot_w, plot_h, true);

  float zero = std::round(val_pos(0.0) * 2) / 2;
  for (size_t i = 0; i < n; ++i) {
    float v = s.values[i];
    float c0 = (horiz ? plot_y : plot_x) + pitch * i + (pitch - bar_thick) / 2;
    float cc = (horiz ? plot_y : plot_x) + pitch * (i + 0.5f);
    Rgb color = s.colors.empty() ? kDefaultBar : s.colors.size() == 1 ? s.colors[0] : s.colors[i];
    if (!std::isfinite(v)) {
      if (horiz)
        put_text(f, zero + 4, cc + kTickSize * kCapHeight / 2, vlabels[i], kTickSize, kNanColor,
                 Anchor::Start, 0, true);
      else
        put_text(f, cc, zero - 4, vlabels[i], kTickSize, kNanColor, Anchor::Middle, 0, true);
      continue;
    }
    float p = val_pos(v);
    if (horiz) put_rect(f, std::min(zero, p), c0, std::fabs(p - zero), bar_thick, color);
    else put_rect(f, c0, std::min(zero, p), bar_thick, std::fabs(p - zero), color);
    if (!values_on) continue;
    if (horiz) {
      if (v >= 0)
        put_text(f, p + 4, cc + vsize * kCapHeight / 2, vlabels[i], vsize, kMuted, Anchor::Start);
      else
        put_text(f, p - 4, cc + vsize * kCapHeight / 2, vlabels[i], vsize, kMuted, Anchor::End);
    } else if (values_rotated) {
      if (v >= 0)
        put_text(f, cc + vsize * kCapHeight / 2, p - 4, vlabels[i], vsize, kMuted, Anchor::Start,
                 -90);
      else
        put_text(f, cc + vsize * kCapHeight / 2, p + 4, vlabels[i], vsize, kMuted, Anchor::End,
                 -90);
    } else {
      if (v >= 0) put_text(f, cc, p - 4, vlabels[i], vsize, kMuted, Anchor::Middle);
      else put_text(f, cc, p + 4 + vsize * kAscent, vlabels[i], vsize, kMuted, Anchor::Middle);
    }
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
      put_text(f, plot_x + plot_w + 6, p + kTickSize * kCapHeight / 2, ref_text, kTickSize,
               kReferenceColor, Anchor::Start);
    }
  }

  // Category labels.
  for (size_t i = 0; i < n; ++i) {
    if (cl.text[i].empty()) continue;
    float cc = (horiz ? plot_y : plot_x) + pitch * (i + 0.5f);
    if (horiz) {
      put_line(f, plot_x - kTickLength, cc, plot_x, cc, kAxisColor, 1);
      put_text(f, plot_x - kTickLength - 3, cc + cl.size * kCapHeight / 2, cl.text[i], cl.size,
               kInk, Anchor::End);
    } else {
      float top = plot_y + plot_h + kTickLength + 3;
      put_line(f, cc, plot_y + plot_h, cc, plot_y + plot_h + kTickLength, kAxisColor, 1);
      if (cl.rotated)
        put_text(f, cc + cl.size * kCapHeight / 2, top, cl.text[i], cl.size, kInk, Anchor::End, -90);
      else
        put_text(f, cc, top + cl.size * kAscent, cl.text[i], cl.size, kInk, Anchor::Middle);
    }
  }

  put_text(f, f.width / 2, title_base, sanitize_text(s.title), kTitleSize, kInk, Anchor::Middle, 0,
           true);
  if (!left_label.empty())
    put_text(f, left_label_x, plot_y + plot_h / 2,
             fit_label(left_label, kAxisLabelSize, plot_h), kAxisLabelSize, kInk,
             Anchor::Middle, -90);
  if (!bottom_label.empty())
    put_text(f, plot_x + plot_w / 2, bottom_label_base,
             fit_label(bottom_label, kAxisLabelSize, f.width - 2 * kPad), kAxisLabelSize, kInk,
             Anchor::Middle);
  return f;
}

// ---- lines -------------------------------------------------------------------------------

Figure make_lines(const LineSpec& s) {
  const std::string kSpec = "LineSpec.";
  for (size_t k = 0; k < s.series.size(); ++k) {
    const LineSeries& ser = s.series[k];
    if (!ser.x.empty() && ser.x.size() != ser.y.size())
      fail(kSpec + "series[" + std::to_string(k) + "].x",
           "has " + std::to_string(ser.x.size()) + " entries, y has " +
               std::to_string(ser.y.size()) + " (x may also be empty)");
  }
  auto xval = [](const LineSeries& ser, size_t i) {
    return ser.x.empty() ? static_cast<double>(i) : static_cast<double>(ser.x[i]);
  };
  auto y_ok = [&](float v) { return std::isfinite(v) && (!s.log_y || v > 0); };

  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = xlo, yhi = -xlo;
  bool any_bad = false;
  for (const auto& ser : s.series) {
    for (size_t i = 0; i < ser.y.size(); ++i) {
      double xv = xval(ser, i);
      if (std::isfinite(xv)) {
        xlo = std::min(xlo, xv);
        xhi = std::max(xhi, xv);
      }
      if (y_ok(ser.y[i]) && std::isfinite(xv)) {
        ylo = std::min(ylo, static_cast<double>(ser.y[i]));
        yhi = std::max(yhi, static_cast<double>(ser.y[i]));
      } else {
        any_bad = true;
      }
    }
  }
  for (const auto& m : s.markers) {
    if (!std::isfinite(m.x)) fail(kSpec + "markers", "has a non-finite x");
    if (s.series.empty() || xlo > xhi) continue;  // no data: markers alone do not set a range
    xlo = std::min(xlo, static_cast<double>(m.x));
    xhi = std::max(xhi, static_cast<double>(m.x));
  }
  if (!(xlo <= xhi)) xlo = 0, xhi = 1;
  if (!(ylo <= yhi)) ylo = s.log_y ? 1 : 0, yhi = s.log_y ? 10 : 1;

  const float plot_w = 520, plot_h = 320;
  Scale xs = linear_scale(xlo, xhi, 8, true);
  Scale ys = s.log_y ? log_scale(ylo, yhi, 8) : linear_scale(ylo, yhi, 7, true);
  float tick_w = max_width(ys.labels, kTickSize);

  // Legend entries.
  struct Entry {
    std::string name;
    Rgb color;
    bool cross;
  };
  std::vector<Entry> legend;
  for (size_t k = 0; k < s.series.size(); ++k) {
    std::string name = s.series[k].name.empty() ? "series " + std::to_string(k) : s.series[k].name;
    legend.push_back({fit_label(name, kTickSize, 200), s.series[k].color, false});
  }
  if (any_bad) legend.push_back({s.log_y ? "non-finite or \u2264 0" : "non-finite", kBadPointColor, true});
  float legend_w = 0;
  for (const auto& e : legend) legend_w = std::max(legend_w, 28 + text_width(e.name, kTickSize));
  const float kLegendRow = 18;

  Figure f;
  float x = kPad, y = kPad;
  float title_base = 0;
  if (!s.title.empty()) {
    title_base = y + kTitleSize * kAscent;
    y += line_height(kTitleSize) + 10;
  }
  float ylab_x = 0;
  if (!s.y_label.empty()) {
    ylab_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize) + 6;
  }
  x += tick_w + kTickLength + 3;
  float plot_x = std::ceil(x), plot_y = std::ceil(y);
  // Half of the widest x tick label may hang over the right edge.
  float right = plot_x + plot_w + (legend.empty() ? 0 : 16 + legend_w);
  right = std::max(right, plot_x + plot_w + text_width(xs.labels.empty() ? "" : xs.labels.back(), kTickSize) / 2) + kPad;
  y = plot_y + plot_h + kTickLength + 3 + line_height(kTickSize);
  float xlab_base = 0;
  if (!s.x_label.empty()) {
    y += 8;
    xlab_base = y + kAxisLabelSize * kAscent;
    y += line_height(kAxisLabelSize);
  }
  float legend_bottom = plot_y + 4 + legend.size() * kLegendRow;
  float title_w = s.title.empty() ? 0 : text_width(s.title, kTitleSize, true);
  f.width = ceil_px(std::max(right, title_w + 2 * kPad));
  f.height = ceil_px(std::max(y, legend_bottom) + kPad);
  float ox = std::floor((f.width - right) / 2);
  plot_x += ox;
  ylab_x += ox;

  emit_left_axis(f, ys, plot_x, plot_y, plot_w, plot_h, true);
  emit_bottom_axis(f, xs, plot_x, plot_y, plot_w, plot_h, true);
  put_rect(f, plot_x, plot_y, plot_w, plot_h, std::nullopt, kAxisColor, 1.0f);

  auto px = [&](double xv) { return plot_x + static_cast<float>(xs.frac(xv)) * plot_w; };
  auto py = [&](double yv) { return plot_y + plot_h - static_cast<float>(ys.frac(yv)) * plot_h; };
  // Marker lines under the series; their labels (collected here) over them, on a white box
  // at the top of the plot, right of the line (left of it near the right edge), one row lower
  // when a label would overlap the previous one.
  struct MarkerLabel {
    float x, y;
    std::string text;
    float w;
    Anchor anchor;
  };
  std::vector<MarkerLabel> marker_labels;
  float prev_right = -1e9f;
  int row = 0;
  for (const auto& m : s.markers) {
    if (m.x < xs.lo || m.x > xs.hi) continue;
    const float mx = std::round(px(m.x)) + 0.5f;
    put_line(f, mx, plot_y, mx, plot_y + plot_h, kMarkerColor, 1.2f, true);
    if (m.label.empty()) continue;
    const std::string label = fit_label(m.label, kTickSize, 120);
    const float w = text_width(label, kTickSize);
    const bool left = mx + 4 + w > plot_x + plot_w;
    const float x0 = left ? mx - 4 - w : mx + 4;
    row = x0 < prev_right + 4 ? row + 1 : 0;
    prev_right = x0 + w;
    marker_labels.push_back({left ? mx - 4 : mx + 4, plot_y + 4 + kTickSize * kAscent + row * (line_height(kTickSize) + 2),
                             label, w, left ? Anchor::End : Anchor::Start});
  }
  std::vector<std::pair<float, float>> bad_points;
  for (const auto& ser : s.series) {
    const size_t m = ser.y.size();
    auto good = [&](size_t i) { return i < m && std::isfinite(xval(ser, i)) && y_ok(ser.y[i]); };
    for (size_t i = 0; i < m; ++i) {
      double xv = xval(ser, i);
      if (!good(i)) {
        float bx = std::isfinite(xv) ? px(xv) : plot_x;
        float by = (std::isinf(ser.y[i]) && ser.y[i] > 0) ? plot_y : plot_y + plot_h;
        bad_points.push_back({bx, by});
        continue;
      }
      if (good(i + 1))
        put_line(f, px(xv), py(ser.y[i]), px(xval(ser, i + 1)), py(ser.y[i + 1]), ser.color, 1.8f);
      bool prev_good = i > 0 && good(i - 1);
      // A lone point, or every point of a short series (a few probe recordings would
      // otherwise read as a bare straight line), gets a marker.
      if ((!prev_good && !good(i + 1)) || m <= kMarkPointsUpTo)
        put_rect(f, px(xv) - 2.5f, py(ser.y[i]) - 2.5f, 5, 5, ser.color);
    }
  }
  for (const auto& b : bad_points) {
    put_line(f, b.first - 4, b.second - 4, b.first + 4, b.second + 4, kBadPointColor, 2);
    put_line(f, b.first - 4, b.second + 4, b.first + 4, b.second - 4, kBadPointColor, 2);
  }
  for (const auto& l : marker_labels) {
    const float bx = l.anchor == Anchor::End ? l.x - l.w : l.x;
    put_rect(f, bx - 2, l.y - kTickSize * kAscent - 1, l.w + 4, line_height(kTickSize) + 1, Rgb{255, 255, 255});
    put_text(f, l.x, l.y, l.text, kTickSize, kInk, l.anchor);
  }

  float lx = plot_x + plot_w + 16;
  for (size_t k = 0; k < legend.size(); ++k) {
    float cy = plot_y + 4 + (k + 0.5f) * kLegendRow;
    if (legend[k].cross) {
      put_line(f, lx + 7, cy - 4, lx + 15, cy + 4, legend[k].color, 2);
      put_line(f, lx + 7, cy + 4, lx + 15, cy - 4, legend[k].color, 2);
    } else {
      put_line(f, lx, cy, lx + 22, cy, legend[k].color, 2.5f);
    }
    put_text(f, lx + 28, cy + kTickSize * kCapHeight / 2, legend[k].name, kTickSize, kInk,
             Anchor::Start);
  }

  put_text(f, f.width / 2, title_base, sanitize_text(s.title), kTitleSize, kInk, Anchor::Middle, 0,
           true);
  if (!s.y_label.empty())
    put_text(f, ylab_x, plot_y + plot_h / 2, fit_label(s.y_label, kAxisLabelSize, plot_h),
             kAxisLabelSize, kInk, Anchor::Middle, -90);
  if (!s.x_label.empty())
    put_text(f, plot_x + plot_w / 2, xlab_base, fit_label(s.x_label, kAxisLabelSize, plot_w + 60),
             kAxisLabelSize, kInk, Anchor::Middle);
  return f;
}

// ---- histogram ---------------------------------------------------------------------------

Figure make_histogram(const HistogramSpec& s) {
  const std::string kSpec = "HistogramSpec.";
  if (s.bins < 1 || s.bins > 100000)
    fail(kSpec + "bins", "must be in 1..100000 (got " + std::to_string(s.bins) + ")");
  if (s.lo && !std::isfinite(*s.lo)) fail(kSpec + "lo", "must be finite");
  if (s.hi && !std::isfinite(*s.hi)) fail(kSpec + "hi", "must be finite");
  if (s.lo && s.hi && !(*s.lo < *s.hi)) fail(kSpec + "lo", "must be < hi");

  double dmin = std::numeric_limits<double>::infinity(), dmax = -dmin;
  size_t non_finite = 0;
  for (float v : s.samples) {
    if (std::isfinite(v)) {
      dmin = std::min(dmin, static_cast<double>(v));
      dmax = std::max(dmax, static_cast<double>(v));
    } else {
      ++non_finite;
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
  std::vector<size_t> counts(static_cast<size_t>(s.bins), 0);
  size_t outside = 0, counted = 0;
  for (float v : s.samples) {
    if (!std::isfinite(v)) continue;
    if (v < lo || v > hi) {
      ++outside;
      continue;
    }
    size_t b = static_cast<size_t>((v - lo) / (hi - lo) * s.bins);
    if (b >= counts.size()) b = counts.size() - 1;
    ++counts[b];
    ++counted;
  }
  size_t max_count = 0;
  for (size_t c : counts) max_count = std::max(max_count, c);

  const float plot_w = 520, plot_h = 300;
  Scale xs = linear_scale(lo, hi, 8, false);
  Scale ys = linear_scale(0, std::max<double>(1, max_count), 6, true);
  if (ys.step < 1) {
    ys.step = 1;
    ys.hi = std::ceil(ys.hi);
    fill_ticks(ys);
  }
  float tick_w = max_width(ys.labels, kTickSize);
  std::string subtitle = "n = " + std::to_string(counted);
  if (non_finite || outside) {
    subtitle += " (not counted:";
    if (non_finite) subtitle += " " + std::to_string(non_finite) + " non-finite";
    if (non_finite && outside) subtitle += ",";
    if (outside) subtitle += " " + std::to_string(outside) + " outside the range";
    subtitle += ")";
  }

  Figure f;
  float x = kPad, y = kPad;
  float title_base = 0;
  if (!s.title.empty()) {
    title_base = y + kTitleSize * kAscent;
    y += line_height(kTitleSize) + 2;
  }
  float subtitle_base = y + kSubtitleSize * kAscent;
  y += line_height(kSubtitleSize) + 10;
  float ylab_x = 0;
  if (!s.y_label.empty()) {
    ylab_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize) + 6;
  }
  x += tick_w + kTickLength + 3;
  float plot_x = std::ceil(x), plot_y = std::ceil(y);
  float right = plot_x + plot_w + 24 + kPad;
  y = plot_y + plot_h + kTickLength + 3 + line_height(kTickSize);
  float xlab_base = 0;
  if (!s.x_label.empty()) {
    y += 8;
    xlab_base = y + kAxisLabelSize * kAscent;
    y += line_height(kAxisLabelSize);
  }
  float head_w = std::max(s.title.empty() ? 0 : text_width(s.title, kTitleSize, true),
                          text_width(subtitle, kSubtitleSize));
  f.width = ceil_px(std::max(right, head_w + 2 * kPad));
  f.height = ceil_px(y + kPad);
  float ox = std::floor((f.width - right) / 2);
  plot_x += ox;
  ylab_x += ox;

  emit_left_axis(f, ys, plot_x, plot_y, plot_w, plot_h, true);
  emit_bottom_axis(f, xs, plot_x, plot_y, plot_w, plot_h, false);
  float bin_w = plot_w / s.bins;
  float gap = bin_w >= 5 ? 1.0f : 0.0f;
  for (int b = 0; b < s.bins; ++b) {
    if (counts[b] == 0) continue;
    float h = static_cast<float>(ys.frac(static_cast<double>(counts[b]))) * plot_h;
    put_rect(f, plot_x + b * bin_w, plot_y + plot_h - h, bin_w - gap, h, kDefaultBar);
  }
  put_line(f, plot_x, plot_y + plot_h, plot_x + plot_w, plot_y + plot_h, kAxisColor, 1);
  put_line(f, plot_x, plot_y, plot_x, plot_y + plot_h, kAxisColor, 1);

  put_text(f, f.width / 2, title_base, sanitize_text(s.title), kTitleSize, kInk, Anchor::Middle, 0,
           true);
  put_text(f, f.width / 2, subtitle_base, subtitle, kSubtitleSize, kMuted, Anchor::Middle);
  if (!s.y_label.empty())
    put_text(f, ylab_x, plot_y + plot_h / 2, fit_label(s.y_label, kAxisLabelSize, plot_h),
             kAxisLabelSize, kInk, Anchor::Middle, -90);
  if (!s.x_label.empty())
    put_text(f, plot_x + plot_w / 2, xlab_base, fit_label(s.x_label, kAxisLabelSize, plot_w + 60),
             kAxisLabelSize, kInk, Anchor::Middle);
  return f;
}

}  // namespace mnemo::viz
