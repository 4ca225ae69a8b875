// Live curves in ImGui (the training dashboard): any number of viz::MinMaxSeries drawn with at
// most two points per pixel column (min/max), so a million-point curve costs what a
// thousand-point one does; NaN/Inf points drawn as red markers on the plot edge instead of
// being dropped; pan (drag), zoom (wheel, around the mouse), double-click to fit; hover
// shows every series' nearest point with its exact value.
#pragma once
#include "viz/series.h"

#include <imgui.h>

#include <string>
#include <vector>

namespace mnemo::app::ui {

struct CurveSeries {
  const viz::MinMaxSeries* data = nullptr;
  std::string name;
  ImU32 color = IM_COL32(31, 119, 180, 255);
  bool dashed = false;  // e.g. the second session of an overlay
};

// A vertical dashed line at data x (e.g. a curriculum change), with a short label at the top
// and `detail` in the hover tooltip when the mouse is within a few pixels of it.
struct CurveMarker {
  double x = 0;
  std::string label, detail;
};

// Pan/zoom state of one chart; keep it across frames.
struct CurveView {
  bool follow = true;    // x range = all data (grows with a live run); panning turns it off
  double x0 = 0, x1 = 1; // visible x range when !follow
  bool log_y = false;
};

// A range of x shaded behind the curves with a label in the tooltip (e.g. a damaged stretch
// of metrics.log between two training steps: nothing is known there).
struct CurveBand {
  double x0 = 0, x1 = 0;
  std::string label;
};

struct CurveHit {
  bool hovered = false;  // the mouse is over the plot
  double x = 0;          // data x under the mouse
  int series = -1;       // nearest series at that x (-1 none)
  size_t index = 0;      // its point index
};

// The polyline of one series in plot pixels for the visible x range [x0, x1] and y range
// [y0, y1] mapped onto a plot of `width` x `height` pixels at the origin (y down): at most
// two points per pixel column. Non-finite points go to `markers` (x pixel; y = 0 for +Inf,
// height otherwise). Exposed for tests.
void curve_polyline(const viz::MinMaxSeries& s, double x0, double x1, float y0, float y1, bool log_y, float width,
                    float height, std::vector<ImVec2>* points, std::vector<ImVec2>* markers);

// For each series the index of an earlier one with the same points (viz::same_points), or -1.
// draw_curves draws such a series as white-edged square marks (>= 14 px apart) over the
// other's line instead of a line that would hide it exactly, and its legend entry and
// tooltip read "NAME (same as OTHER)" (e.g. "valid, memory zeroed (same as valid)").
std::vector<int> coinciding_curves(const std::vector<CurveSeries>& series);

// Draws at the cursor, filling `size`, and advances the layout by `size`. `title` is drawn
// above the plot; `y_label` in the tooltip; `markers` are dashed vertical lines; `bands`
// (may be null) are shaded behind the curves and named in the legend ("log gap") and the
// tooltip. Call inside a window.
CurveHit draw_curves(const char* id, const char* title, const std::vector<CurveSeries>& series, ImVec2 size, CurveView* view,
                     const std::vector<CurveMarker>& markers = {}, const std::vector<CurveBand>* bands = nullptr);

}  // namespace mnemo::app::ui
