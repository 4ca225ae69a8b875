#include "app/gui/panels/widgets/curves.h"

#include "viz/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mnemo::app::ui {

namespace {

constexpr ImU32 kMarker = IM_COL32(220, 30, 30, 255);
constexpr ImU32 kBand = IM_COL32(240, 150, 30, 70);       // a gap in the log (translucent orange)
constexpr ImU32 kBandText = IM_COL32(240, 150, 30, 255);

float to_axis(float v, bool log_y) { return log_y ? (v > 0 ? std::log10(v) : std::numeric_limits<float>::quiet_NaN()) : v; }

// Finite y range of the points of every series inside [x0, x1].
bool visible_y_range(const std::vector<CurveSeries>& series, double x0, double x1, bool log_y, float* lo, float* hi) {
  *lo = std::numeric_limits<float>::infinity();
  *hi = -std::numeric_limits<float>::infinity();
  for (const auto& s : series) {
    if (!s.data || s.data->empty()) continue;
    // Index range of points with x in [x0, x1] through the columns API (one column).
    for (const auto& c : s.data->columns(x0, x1, 1)) {
      if (!c.has_finite()) continue;
      float a = to_axis(c.min, log_y), b = to_axis(c.max, log_y);
      if (log_y && !(b == b)) continue;
      if (log_y && !(a == a)) a = b;  // min <= 0 on a log axis: the smallest positive is unknown; use max
      *lo = std::min(*lo, a);
      *hi = std::max(*hi, b);
    }
  }
  if (!(*lo <= *hi)) return false;
  if (*lo == *hi) {
    const float pad = std::abs(*lo) > 0 ? std::abs(*lo) * 0.05f : 0.5f;
    *lo -= pad;
    *hi += pad;
  } else {
    const float pad = (*hi - *lo) * 0.04f;
    *lo -= pad;
    *hi += pad;
  }
  return true;
}

bool data_x_range(const std::vector<CurveSeries>& series, double* x0, double* x1) {
  *x0 = std::numeric_limits<double>::infinity();
  *x1 = -std::numeric_limits<double>::infinity();
  for (const auto& s : series) {
    if (!s.data || s.data->empty()) continue;
    *x0 = std::min(*x0, s.data->x(0));
    *x1 = std::max(*x1, s.data->x(s.data->size() - 1));
  }
  if (!(*x0 <= *x1)) return false;
  if (*x0 == *x1) {
    *x0 -= 0.5;
    *x1 += 0.5;
  }
  return true;
}

void dashed_polyline(ImDrawList* dl, const std::vector<ImVec2>& p, ImU32 col, float thick) {
  float carry = 0;
  const float on = 6.f, period = 10.f;
  for (size_t i = 1; i < p.size(); ++i) {
    const ImVec2 a = p[i - 1], b = p[i];
    const float len = std::hypot(b.x - a.x, b.y - a.y);
    if (len <= 0) continue;
    for (float t = -carry; t < len; t += period) {
      const float s0 = std::max(0.f, t), s1 = std::min(len, t + on);
      if (s1 > s0)
        dl->AddLine(ImVec2(a.x + (b.x - a.x) * s0 / len, a.y + (b.y - a.y) * s0 / len),
                    ImVec2(a.x + (b.x - a.x) * s1 / len, a.y + (b.y - a.y) * s1 / len), col, thick);
    }
    carry = std::fmod(carry + len, period);
  }
}

}  // namespace

std::vector<int> coinciding_curves(const std::vector<CurveSeries>& series) {
  std::vector<int> same(series.size(), -1);
  for (size_t k = 1; k < series.size(); ++k) {
    if (!series[k].data || series[k].data->empty()) continue;
    for (size_t j = 0; j < k && same[k] < 0; ++j)
      if (series[j].data && same[j] < 0 && viz::same_points(*series[j].data, *series[k].data)) same[k] = static_cast<int>(j);
  }
  return same;
}

void curve_polyline(const viz::MinMaxSeries& s, double x0, double x1, float y0, float y1, bool log_y, float width, float height,
                    std::vector<ImVec2>* points, std::vector<ImVec2>* markers) {
  points->clear();
  if (markers) markers->clear();
  if (s.empty() || !(x1 > x0) || width < 1 || height < 1) return;
  const int ncol = std::max(1, static_cast<int>(width));
  const double xscale = width / (x1 - x0);
  const float ya = to_axis(y0, log_y), yb = to_axis(y1, log_y);
  auto py = [&](float v) {
    const float a = to_axis(v, log_y);
    const float t = (a - ya) / (yb - ya);
    return height - std::clamp(t, -0.05f, 1.05f) * height;
  };
  const auto cols = s.columns(x0, x1, ncol);
  for (int k = 0; k < ncol; ++k) {
    const auto& c = cols[static_cast<size_t>(k)];
    if (!c.has_finite()) continue;
    const float lo = to_axis(c.min, log_y), hi = to_axis(c.max, log_y);
    if (!(lo == lo) || !(hi == hi)) continue;  // not drawable on a log axis (<= 0)
    const float px = static_cast<float>(k) + 0.5f;
    // Min then max when the column rises, max then min when it falls, so the line joins its
    // neighbours at the right ends.
    const float first = py(c.min), second = py(c.max);
    const bool ascending = s.y(c.first) <= s.y(c.last - 1);
    points->push_back(ImVec2(px, ascending ? first : second));
    if (c.min != c.max) points->push_back(ImVec2(px, ascending ? second : first));
  }
  if (markers) {
    for (size_t i : s.non_finite()) {
      const double x = s.x(i);
      if (x < x0 || x > x1) continue;
      const float px = static_cast<float>((x - x0) * xscale);
      const float y = s.y(i);
      markers->push_back(ImVec2(px, y > 0 && std::isinf(y) ? 0.f : height));
    }
  }
}

namespace {

// The plot's frame inside the widget: corners and size (at least 1 px each way).
struct PlotArea {
  ImVec2 p0, p1;
  float pw = 1.f, ph = 1.f;
  float x_of(double x, const CurveView& v) const { return p0.x + static_cast<float>((x - v.x0) / (v.x1 - v.x0)) * pw; }
};

// A series' legend swatch and marks over a twin's line: a filled square with a white edge.
void draw_mark(ImDrawList* dl, ImVec2 c, ImU32 col) {
  const float mark = std::max(3.f, ImGui::GetFontSize() * 0.22f);  // half the side of a mark
  dl->AddRectFilled(ImVec2(c.x - mark, c.y - mark), ImVec2(c.x + mark, c.y + mark), col);
  dl->AddRect(ImVec2(c.x - mark, c.y - mark), ImVec2(c.x + mark, c.y + mark), IM_COL32(255, 255, 255, 230));
}

// A series' legend name: a twin of an earlier series says which.
std::string legend_name(const std::vector<CurveSeries>& series, const std::vector<int>& same, size_t k) {
  return same[k] >= 0 ? series[k].name + " (same as " + series[static_cast<size_t>(same[k])].name + ")" : series[k].name;
}

// Title and legend on the first line (a swatch per series, the non-finite mark, the band).
void draw_legend(ImDrawList* dl, ImVec2 origin, const char* title, const std::vector<CurveSeries>& series,
                 const std::vector<int>& same, bool any_band) {
  const float line = ImGui::GetTextLineHeight();
  float lx = origin.x + 2;
  dl->AddText(ImVec2(lx, origin.y), ImGui::GetColorU32(ImGuiCol_Text), title);
  lx += ImGui::CalcTextSize(title).x + 12;
  bool any_bad = false;
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    if (!s.data) continue;
    any_bad |= !s.data->non_finite().empty();
    dl->AddLine(ImVec2(lx, origin.y + line * 0.55f), ImVec2(lx + 14, origin.y + line * 0.55f), s.color, 2.f);
    if (same[k] >= 0) draw_mark(dl, ImVec2(lx + 7, origin.y + line * 0.55f), s.color);
    lx += 18;
    const std::string name = legend_name(series, same, k);
    dl->AddText(ImVec2(lx, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), name.c_str());
    lx += ImGui::CalcTextSize(name.c_str()).x + 10;
  }
  if (any_bad) {
    dl->AddText(ImVec2(lx, origin.y), kMarker, "x non-finite");
    lx += ImGui::CalcTextSize("x non-finite").x + 10;
  }
  if (any_band) {
    dl->AddRectFilled(ImVec2(lx, origin.y + 2), ImVec2(lx + 12, origin.y + line - 2), kBand);
    dl->AddText(ImVec2(lx + 16, origin.y), kBandText, "log gap");
  }
}

// Pan (drag), zoom (wheel) and fit (double-click, or following the data's x range).
void pan_and_zoom(CurveView* view, const PlotArea& a, bool hovered, bool active, double dx0, double dx1) {
  if (view->follow) {
    view->x0 = dx0;
    view->x1 = dx1;
  }
  const ImGuiIO& io = ImGui::GetIO();
  const double span = view->x1 - view->x0;
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 1.f)) {
    const double d = -io.MouseDelta.x / a.pw * span;
    view->x0 += d;
    view->x1 += d;
    view->follow = false;
  }
  if (hovered && io.MouseWheel != 0) {
    const double mx = view->x0 + (io.MousePos.x - a.p0.x) / a.pw * span;
    const double f = std::pow(0.85, io.MouseWheel);
    const double ns = std::max(span * f, 1e-9);
    view->x0 = mx - (mx - view->x0) * ns / span;
    view->x1 = view->x0 + ns;
    view->follow = false;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    view->follow = true;
    view->x0 = dx0;
    view->x1 = dx1;
  }
  if (!(view->x1 > view->x0)) view->x1 = view->x0 + 1;
}

// Grid and tick labels (axis units: log10 on a log axis).
void draw_grid(ImDrawList* dl, const PlotArea& a, const CurveView& view, float ylo, float yhi) {
  const float line = ImGui::GetTextLineHeight();
  const ImU32 grid = ImGui::GetColorU32(ImGuiCol_Border, 0.5f), label = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const auto ty = viz::nice_ticks(ylo, yhi, std::max(2, static_cast<int>(a.ph / (line * 2.2f))));
  const double step = viz::tick_step(ty, ylo, yhi);
  for (double v : ty) {
    const float y = a.p1.y - static_cast<float>((v - ylo) / (yhi - ylo)) * a.ph;
    dl->AddLine(ImVec2(a.p0.x, y), ImVec2(a.p1.x, y), grid);
    std::string t = view.log_y ? viz::format_log_tick(v) : viz::format_tick(v, step);
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str());
    dl->AddText(ImVec2(a.p0.x - ts.x - 4, y - ts.y * 0.5f), label, t.c_str());
  }
  const auto tx = viz::nice_ticks(view.x0, view.x1, std::max(2, static_cast<int>(a.pw / 80)));
  const double xstep = viz::tick_step(tx, view.x0, view.x1);
  for (double v : tx) {
    const float x = a.x_of(v, view);
    dl->AddLine(ImVec2(x, a.p0.y), ImVec2(x, a.p1.y), grid);
    const std::string t = viz::format_tick(v, xstep);
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str());
    dl->AddText(ImVec2(x - ts.x * 0.5f, a.p1.y + 2), label, t.c_str());
  }
}

// Bands (behind the series): at least 3 px wide, so a gap between two adjacent steps shows.
void draw_bands(ImDrawList* dl, const PlotArea& a, const CurveView& view, const std::vector<CurveBand>& bands) {
  for (const auto& b : bands) {
    float bx0 = a.x_of(b.x0, view);
    float bx1 = a.x_of(b.x1, view);
    if (bx1 - bx0 < 3.f) {
      const float c = 0.5f * (bx0 + bx1);
      bx0 = c - 1.5f;
      bx1 = c + 1.5f;
    }
    bx0 = std::max(bx0, a.p0.x);
    bx1 = std::min(bx1, a.p1.x);
    if (bx1 > bx0) dl->AddRectFilled(ImVec2(bx0, a.p0.y), ImVec2(bx1, a.p1.y), kBand);
  }
}

// Markers (under the series): dashed lines with their labels; returns the one within 4 px of
// the pointer (null: none).
const CurveMarker* draw_markers(ImDrawList* dl, const PlotArea& a, const CurveView& view,
                                const std::vector<CurveMarker>& markers, bool hovered, ImU32 marker_col) {
  const float line = ImGui::GetTextLineHeight();
  const ImGuiIO& io = ImGui::GetIO();
  const CurveMarker* near_marker = nullptr;
  float prev_right = -1e9f;
  int row = 0;
  for (const auto& m : markers) {
    if (m.x < view.x0 || m.x > view.x1) continue;
    const float x = std::round(a.x_of(m.x, view));
    for (float y = a.p0.y; y < a.p1.y; y += 8) dl->AddLine(ImVec2(x, y), ImVec2(x, std::min(y + 4, a.p1.y)), marker_col, 1.f);
    // The label right of the line (left of it near the right edge), one row lower when it
    // would overlap the previous one.
    const float w = ImGui::CalcTextSize(m.label.c_str()).x;
    const float lx0 = x + 3 + w > a.p1.x ? x - 3 - w : x + 3;
    row = lx0 < prev_right + 4 ? row + 1 : 0;
    prev_right = lx0 + w;
    dl->AddText(ImVec2(lx0, a.p0.y + 1 + static_cast<float>(row) * line), marker_col, m.label.c_str());
    if (hovered && std::abs(io.MousePos.x - x) <= 4) near_marker = &m;
  }
  return near_marker;
}

// Series: polylines (dashed, or marks over a twin's line), their points when short, and the
// non-finite values' crosses.
void draw_series(ImDrawList* dl, const PlotArea& a, const CurveView& view, const std::vector<CurveSeries>& series,
                 const std::vector<int>& same, float ylo, float yhi) {
  const ImVec2 p0 = a.p0, p1 = a.p1;
  const float y0 = view.log_y ? std::pow(10.f, ylo) : ylo, y1 = view.log_y ? std::pow(10.f, yhi) : yhi;
  std::vector<ImVec2> pts, marks;
  dl->PushClipRect(p0, p1, true);
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    if (!s.data) continue;
    curve_polyline(*s.data, view.x0, view.x1, y0, y1, view.log_y, a.pw, a.ph, &pts, &marks);
    for (auto& p : pts) p = ImVec2(p.x + p0.x, p.y + p0.y);
    if (same[k] >= 0) {
      // Marks at least 14 px apart on top of the twin's line (and its last point).
      float last_x = -1e9f;
      for (size_t i = 0; i < pts.size(); ++i)
        if (pts[i].x - last_x >= 14.f || i + 1 == pts.size()) {
          draw_mark(dl, pts[i], s.color);
          last_x = pts[i].x;
        }
      continue;
    }
    if (pts.size() == 1) dl->AddCircleFilled(pts[0], 2.5f, s.color);
    else if (s.dashed) dashed_polyline(dl, pts, s.color, 1.5f);
    else if (pts.size() > 1) dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), s.color, 0, 1.5f);
    // A short series (e.g. a few probe recordings) marks its points, as the exported figures do.
    if (pts.size() > 1 && s.data->size() <= viz::kMarkPointsUpTo)
      for (const auto& p : pts) dl->AddCircleFilled(p, 2.5f, s.color);
    for (const auto& m : marks) {
      const ImVec2 c(m.x + p0.x, std::clamp(m.y + p0.y, p0.y + 5, p1.y - 5));
      dl->AddLine(ImVec2(c.x - 4, c.y - 4), ImVec2(c.x + 4, c.y + 4), kMarker, 2.f);
      dl->AddLine(ImVec2(c.x - 4, c.y + 4), ImVec2(c.x + 4, c.y - 4), kMarker, 2.f);
    }
  }
  dl->PopClipRect();
}

// Hover: the nearest point of every series at the pointer's x in a tooltip (with the band and
// the marker there); `hit` gets the nearest of all.
void curve_tooltip(ImDrawList* dl, const PlotArea& a, const CurveView& view, const std::vector<CurveSeries>& series,
                   const std::vector<int>& same, const std::vector<CurveBand>* bands, const CurveMarker* near_marker,
                   ImU32 marker_col, CurveHit& hit) {
  const ImGuiIO& io = ImGui::GetIO();
  hit.hovered = true;
  hit.x = view.x0 + (io.MousePos.x - a.p0.x) / a.pw * (view.x1 - view.x0);
  dl->AddLine(ImVec2(io.MousePos.x, a.p0.y), ImVec2(io.MousePos.x, a.p1.y), ImGui::GetColorU32(ImGuiCol_Text, 0.4f));
  ImGui::BeginTooltip();
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < series.size(); ++k) {
    const auto* d = series[k].data;
    if (!d || d->empty()) continue;
    const size_t i = d->nearest(hit.x);
    if (i >= d->size()) continue;
    const double dist = std::abs(d->x(i) - hit.x);
    if (dist < best) {
      best = dist;
      hit.series = static_cast<int>(k);
      hit.index = i;
    }
    const float y = d->y(i);
    char buf[160];
    const std::string name = legend_name(series, same, k);
    if (std::isfinite(y)) std::snprintf(buf, sizeof buf, "%s  step %.0f: %.6g", name.c_str(), d->x(i), y);
    else std::snprintf(buf, sizeof buf, "%s  step %.0f: %s (non-finite)", name.c_str(), d->x(i), std::isnan(y) ? "NaN" : (y > 0 ? "+Inf" : "-Inf"));
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(std::isfinite(y) ? series[k].color : kMarker), "%s", buf);
  }
  if (bands)
    for (const auto& b : *bands)
      if (hit.x >= b.x0 - 0.5 && hit.x <= b.x1 + 0.5) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kBandText), "%s", b.label.c_str());
  if (near_marker) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(marker_col), "step %.0f: %s", near_marker->x,
                                      near_marker->detail.empty() ? near_marker->label.c_str() : near_marker->detail.c_str());
  ImGui::TextDisabled("drag: pan  wheel: zoom  double-click: fit");
  ImGui::EndTooltip();
}

}  // namespace

CurveHit draw_curves(const char* id, const char* title, const std::vector<CurveSeries>& series, ImVec2 size, CurveView* view,
                     const std::vector<CurveMarker>& markers, const std::vector<CurveBand>* bands) {
  CurveHit hit;
  ImGui::PushID(id);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float line = ImGui::GetTextLineHeight();
  size.x = std::max(size.x, 40.f);
  size.y = std::max(size.y, 3 * line + 10.f);
  ImGui::InvisibleButton("##plot", size, ImGuiButtonFlags_MouseButtonLeft);
  const bool hovered = ImGui::IsItemHovered();
  const bool active = ImGui::IsItemActive();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(origin, ImVec2(origin.x + size.x, origin.y + size.y), true);

  // A series with the same points as an earlier one is drawn as marks over that one's line
  // (it would hide it exactly), and its legend entry says so.
  const std::vector<int> same = coinciding_curves(series);
  const bool any_band = bands && !bands->empty();
  draw_legend(dl, origin, title, series, same, any_band);

  const float left = ImGui::CalcTextSize("-0.0000").x + 6, bottom = line + 4;
  const float right = ImGui::CalcTextSize("00000").x * 0.5f + 4;  // room for the last x tick label
  PlotArea a;
  a.p0 = ImVec2(origin.x + left, origin.y + line + 4);
  a.p1 = ImVec2(origin.x + size.x - right, origin.y + size.y - bottom);
  a.pw = std::max(1.f, a.p1.x - a.p0.x);
  a.ph = std::max(1.f, a.p1.y - a.p0.y);
  dl->AddRectFilled(a.p0, a.p1, ImGui::GetColorU32(ImGuiCol_FrameBg));

  double dx0 = 0, dx1 = 1;
  if (!data_x_range(series, &dx0, &dx1)) {
    dl->AddText(ImVec2(a.p0.x + 6, a.p0.y + 4), ImGui::GetColorU32(ImGuiCol_TextDisabled), "no data yet");
    dl->PopClipRect();
    ImGui::PopID();
    return hit;
  }
  pan_and_zoom(view, a, hovered, active, dx0, dx1);
  float ylo = 0, yhi = 1;
  if (!visible_y_range(series, view->x0, view->x1, view->log_y, &ylo, &yhi)) {
    ylo = 0;
    yhi = 1;
  }
  draw_grid(dl, a, *view, ylo, yhi);
  if (any_band) draw_bands(dl, a, *view, *bands);
  const ImU32 marker_col = ImGui::GetColorU32(ImGuiCol_Text, 0.55f);
  const CurveMarker* near_marker = draw_markers(dl, a, *view, markers, hovered, marker_col);
  draw_series(dl, a, *view, series, same, ylo, yhi);
  const ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MousePos.x >= a.p0.x && io.MousePos.x <= a.p1.x)
    curve_tooltip(dl, a, *view, series, same, any_band ? bands : nullptr, near_marker, marker_col, hit);
  dl->PopClipRect();
  ImGui::PopID();
  return hit;
}

}  // namespace mnemo::app::ui
