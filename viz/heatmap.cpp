// make_heatmap (viz/charts.h): cells, column groups, row and column labels, a colorbar.
#include <algorithm>
#include <cmath>
#include <limits>

#include "viz/chart_frame.h"
#include "viz/charts.h"

namespace mnemo::viz {
namespace chart {
namespace {

constexpr float kMaxMapSize = 2100;  // heatmap cell area limit per direction
constexpr const char* kHeatmapNanLegend = "NaN/Inf";

void check_heatmap(const HeatmapSpec& s) {
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
  if (!std::isnan(s.cell_h) && (!(s.cell_h > 0) || !std::isfinite(s.cell_h)))
    fail(kSpec + "cell_h", "must be NaN (square cells) or a finite size > 0");
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
}

// The colour range [vmin, vmax] (see HeatmapSpec) and how many cells are not finite.
struct ValueRange {
  double vmin = 0, vmax = 1;
  size_t non_finite = 0;
};

ValueRange heatmap_range(const HeatmapSpec& s) {
  float dmin = std::numeric_limits<float>::infinity(), dmax = -dmin;
  ValueRange r;
  for (float v : s.values) {
    if (std::isfinite(v)) {
      dmin = std::min(dmin, v);
      dmax = std::max(dmax, v);
    } else {
      ++r.non_finite;
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
  r.vmin = vmin;
  r.vmax = vmax;
  return r;
}

// Cell width and height: `cell`, or less in a direction whose cells would not fit
// kMaxMapSize (see HeatmapSpec).
void heatmap_cell_size(const HeatmapSpec& s, float* cell_w, float* cell_h) {
  const size_t rows = static_cast<size_t>(s.rows), cols = static_cast<size_t>(s.cols);
  auto snap = [](float c) { return c >= 1 ? std::floor(c * 2) / 2 : c; };
  // A direction that fits keeps `cell`; when both must shrink the cells stay square.
  const bool square = std::isnan(s.cell_h);
  float cw = s.cell, ch = square ? s.cell : s.cell_h;
  bool shrink_w = cols * cw > kMaxMapSize, shrink_h = rows * ch > kMaxMapSize;
  if (shrink_w && shrink_h && square) cw = ch = kMaxMapSize / std::max(rows, cols);
  else if (shrink_w && shrink_h) cw = kMaxMapSize / cols, ch = kMaxMapSize / rows;
  else if (shrink_w) cw = kMaxMapSize / cols;
  else if (shrink_h) ch = kMaxMapSize / rows;
  *cell_w = snap(cw);
  *cell_h = snap(ch);
}

// The map: one cell per value (row-major), the separators, the frame and the highlighted row.
void emit_cells(Figure& f, const HeatmapSpec& s, const ValueRange& range, float map_x, float map_y, float cw,
                float ch) {
  const size_t rows = static_cast<size_t>(s.rows), cols = static_cast<size_t>(s.cols);
  const float map_w = cols * cw, map_h = rows * ch;
  const double vmin = range.vmin, inv = 1.0 / (range.vmax - range.vmin);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      float v = s.values[r * cols + c];
      Rgb color = std::isfinite(v) ? sample(s.cmap, static_cast<float>((v - vmin) * inv))
                                   : nan_color(s.cmap);
      put_rect(f, map_x + c * cw, map_y + r * ch, cw, ch, color, std::nullopt, 1.0f, true);
    }
  }
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
}

// The colorbar at (x, y), w x h: 1 px bands (top = vmax), frame, ticks, its label (rotated,
// at label_x); below it the NaN/Inf swatch at nan_y when some cell is not finite.
void emit_colorbar(Figure& f, const HeatmapSpec& s, const Scale& scale, float x, float y, float w, float h,
                   float label_x, float nan_y, bool non_finite) {
  int bands = std::max(2, static_cast<int>(std::lround(h)));
  for (int i = 0; i < bands; ++i) {
    float t = 1.0f - (i + 0.5f) / bands;
    put_rect(f, x, y + h * i / bands, w, h / bands, sample(s.cmap, t));
  }
  put_rect(f, x, y, w, h, std::nullopt, kAxisColor, 1.0f);
  emit_value_axis(f, scale, Side::Right, x, y, w, h, false);
  if (!s.colorbar_label.empty())
    put_text(f, label_x, y + h / 2, fit_label(s.colorbar_label, kAxisLabelSize, h), kAxisLabelSize, kInk,
             Anchor::Middle, -90);
  if (non_finite) {
    put_rect(f, x, nan_y, 12, 12, nan_color(s.cmap), kAxisColor, 1.0f);
    put_text(f, x + 17, nan_y + 6 + kTickSize * kCapHeight / 2, kHeatmapNanLegend, kTickSize, kInk, Anchor::Start);
  }
}

// Column groups: a bracket over each span and its label above it. A label may overhang its
// span into free space; it is cut where it would run into the previous label or into the
// next label (assumed centred on its own span).
void emit_col_groups(Figure& f, const HeatmapSpec& s, float map_x, float map_y, float map_w, float cw,
                     float group_base) {
  std::vector<std::pair<int, std::string>> groups = s.col_groups;
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
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

}  // namespace
}  // namespace chart

Figure make_heatmap(const HeatmapSpec& s) {
  using namespace chart;
  check_heatmap(s);
  const size_t rows = static_cast<size_t>(s.rows), cols = static_cast<size_t>(s.cols);
  const ValueRange range = heatmap_range(s);
  const double vmin = range.vmin, vmax = range.vmax;
  const size_t non_finite = range.non_finite;

  float cw = 0, ch = 0;
  heatmap_cell_size(s, &cw, &ch);
  const float map_w = cols * cw, map_h = rows * ch;

  // Labels.
  CategoryLabels rlab = layout_categories(s.row_labels, ch, false, s.highlight_row);
  CategoryLabels clab = layout_categories(s.col_labels, cw, true);
  // A thinned axis says so in its label (the shown labels would otherwise read as the tokens).
  const std::string x_label = with_thinning_note(s.x_label, clab.step);
  const std::string y_label = with_thinning_note(s.y_label, rlab.step);

  // Colorbar ticks (need the bar height).
  const float cb_w = 14;
  const float cb_h = std::max(map_h, 120.0f);
  int max_cb_ticks = std::clamp(static_cast<int>(cb_h / (kTickSize * 2.4f)) + 1, 2, 11);
  Scale cb_scale = linear_scale(vmin, vmax, max_cb_ticks, false);
  float cb_tick_w = max_width(cb_scale.labels, kTickSize);
  float nan_legend_w = non_finite ? 12 + 5 + text_width(kHeatmapNanLegend, kTickSize) : 0;

  // Horizontal layout (local x, shifted by ox at the end).
  Frame fr(s.title, y_label, x_label);
  fr.left_label();
  float row_label_right = 0;
  if (rlab.extent > 0) {
    fr.left_axis(rlab.extent);
    row_label_right = fr.x - kTickLength - 3;
  }
  float map_x = std::ceil(fr.x);
  float cb_x = map_x + map_w + 16;
  float cb_right = std::max(cb_x + cb_w + kTickLength + 3 + cb_tick_w, cb_x + nan_legend_w);
  float x = cb_right;
  float cblab_x = 0;
  if (!s.colorbar_label.empty()) {
    x += 8;
    cblab_x = x + kAxisLabelSize * kAscent;
    x += line_height(kAxisLabelSize);
  }
  x += kPad;
  float content_w = x;

  // Vertical layout.
  fr.head(8);
  float group_base = 0;
  if (!s.col_groups.empty()) {
    group_base = fr.y + kTickSize * kAscent;
    fr.y += line_height(kTickSize) + 9;
  }
  float map_y = std::ceil(fr.y);
  float clab_top = map_y + map_h + kTickLength + 3;
  if (clab.extent > 0) fr.bottom_axis(map_y + map_h, clab.extent);
  else fr.y = map_y + map_h;
  fr.bottom_label();
  float column_bottom = map_y + cb_h + kTickSize * 0.5f;
  float nan_y = map_y + cb_h + 12;
  if (non_finite) column_bottom = nan_y + 12;
  // The y label is centred on the map, or hangs down from its top when longer than it.
  const float ylab_room = std::max(map_h, 160.0f);
  float ylab_len = text_width(fit_label(y_label, kAxisLabelSize, ylab_room), kAxisLabelSize);
  float ylab_cy = map_y + std::max(map_h, ylab_len) / 2;
  float content_h = std::max({fr.y, column_bottom, map_y + ylab_len}) + kPad;

  // The title may widen the figure; the content is centred under it.
  Figure f;
  float ox = fr.size(f, content_w, content_h);
  map_x += ox;
  cb_x += ox;
  row_label_right += ox;
  cblab_x += ox;

  // Cells.
  f.prims.reserve(rows * cols + 64 + 2 * (s.row_labels.size() + s.col_labels.size()) +
                  static_cast<size_t>(cb_h) + 2);
  emit_cells(f, s, range, map_x, map_y, cw, ch);
  if (!s.col_groups.empty()) emit_col_groups(f, s, map_x, map_y, map_w, cw, group_base);

  emit_categories(f, rlab, Side::Left, map_y, ch, map_x, row_label_right, s.highlight_row);
  emit_categories(f, clab, Side::Bottom, map_x, cw, map_y + map_h, clab_top);

  // Title and axis labels.
  fr.draw_head(f);
  if (!x_label.empty()) {
    float cx = map_x + map_w / 2;
    float room = 2 * std::min(cx - kPad, f.width - kPad - cx);
    if (fr.bottom_label_base() - kAxisLabelSize * kAscent < map_y + cb_h) room = 2 * std::min(cx - kPad, cb_x - 6 - cx);
    fr.draw_bottom_label(f, cx, std::max(room, 40.0f));
  }
  fr.draw_left_label(f, ylab_cy, ylab_room);

  emit_colorbar(f, s, cb_scale, cb_x, map_y, cb_w, cb_h, cblab_x, nan_y, non_finite > 0);
  return f;
}

}  // namespace mnemo::viz
