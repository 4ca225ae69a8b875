// Dashboard curves (app/gui/panels/widgets/curves.h): at most two points per pixel column whatever the
// series length, NaN/Inf kept as markers at their step, and the widget drawing a
// million-point series, an empty one and a single point with hover, pan and zoom.
#ifdef MNEMO_WITH_GUI
#include "app/gui/panels/widgets/assert.h"
#include "tests/support/null_imgui.h"
#include "app/gui/panels/widgets/curves.h"
#include "app/gui/panels/widgets/fonts.h"
#endif
#include <doctest/doctest.h>
#ifdef MNEMO_WITH_GUI
#include <imgui.h>

#include <cmath>
#include <limits>
#include <stdexcept>

using namespace mnemo;

TEST_CASE("curves: polyline has at most two points per pixel column, non-finite points become markers") {
  viz::MinMaxSeries s;
  const int n = 1000000;
  for (int i = 0; i < n; ++i) {
    float y = std::sin(i * 0.001f);
    if (i == 250000) y = std::numeric_limits<float>::quiet_NaN();
    if (i == 750000) y = std::numeric_limits<float>::infinity();
    s.append(i, y);
  }
  std::vector<ImVec2> pts, marks;
  app::ui::curve_polyline(s, 0, n - 1, -1.f, 1.f, false, 400.f, 100.f, &pts, &marks);
  CHECK(pts.size() <= 800);
  CHECK(pts.size() >= 400);
  REQUIRE(marks.size() == 2);
  CHECK(marks[0].x == doctest::Approx(400.0 * 250000 / (n - 1)).epsilon(1e-4));
  CHECK(marks[0].y == 100.f);  // NaN: bottom edge
  CHECK(marks[1].y == 0.f);    // +Inf: top edge
  for (const auto& p : pts) {
    CHECK(p.x >= 0.f);
    CHECK(p.x <= 400.f);
    CHECK(p.y >= -5.f - 1e-3f);  // clamped a little outside the plot at most
    CHECK(p.y <= 105.f + 1e-3f);
  }
  // A column's extremes: sin reaches +-1, so the top and bottom rows are both hit.
  float lo = 1e9f, hi = -1e9f;
  for (const auto& p : pts) {
    lo = std::min(lo, p.y);
    hi = std::max(hi, p.y);
  }
  CHECK(lo == doctest::Approx(0.f).epsilon(0.01));
  CHECK(hi == doctest::Approx(100.f).epsilon(0.01));

  // Zoomed in to 10 points over 400 pixels: one point per data point.
  app::ui::curve_polyline(s, 100, 109, -1.f, 1.f, false, 400.f, 100.f, &pts, &marks);
  CHECK(pts.size() == 10);
  CHECK(marks.empty());
  // Log axis: values <= 0 are not drawn.
  viz::MinMaxSeries lg;
  for (int i = 0; i < 10; ++i) lg.append(i, i == 5 ? 0.f : std::pow(10.f, static_cast<float>(i)));
  app::ui::curve_polyline(lg, 0, 9, 1.f, 1e9f, true, 100.f, 90.f, &pts, &marks);
  CHECK(pts.size() == 9);
  CHECK(pts.front().y == doctest::Approx(90.f));  // 10^0 at the bottom
  CHECK(pts.back().y == doctest::Approx(0.f));    // 10^9 at the top
}

TEST_CASE("curves: the widget draws huge, empty and single-point series with hover, pan and zoom") {
  test::NullImGui nul(1200.f, 800.f);  // fonts built: the widget draws text
  ImGuiIO& io = ImGui::GetIO();

  viz::MinMaxSeries big, one, empty, bad;
  for (int i = 0; i < 1000000; ++i) big.append(i, 1.f / (1.f + i * 1e-4f));
  one.append(5, 2.f);
  bad.append(0, std::numeric_limits<float>::quiet_NaN());
  app::ui::CurveView v1, v2, v3;
  v2.log_y = true;
  for (int f = 0; f < 60; ++f) {
    io.MousePos = ImVec2(100.f + f * 10.f, 150.f);
    io.MouseDown[0] = f >= 20 && f < 30;  // a drag pans
    io.MouseWheel = f == 40 ? 2.f : 0.f;  // a wheel step zooms
    nul.frame([&] {
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImVec2(1200, 800));
      ImGui::Begin("dash");
      app::ui::draw_curves("a", "loss", {{&big, "train"}, {&one, "valid", IM_COL32(255, 127, 14, 255), true}},
                      ImVec2(1100, 300), &v1);
      app::ui::draw_curves("b", "log", {{&big, "train"}}, ImVec2(1100, 200), &v2);
      app::ui::draw_curves("c", "empty", {{&empty, "none"}, {&bad, "nan only"}}, ImVec2(1, 1), &v3);
      ImGui::End();
    });
  }
  CHECK_FALSE(v1.follow);  // panned or zoomed
  CHECK(v1.x1 > v1.x0);
  CHECK(v2.follow);        // never touched
}

TEST_CASE("curves: a series with the same points as an earlier one is named same as it and drawn without error") {
  // Retain and mix fractions that are both 0 at every probe, valid and valid with the memory
  // zeroed of a model whose memory does nothing: the later one says "same as".
  viz::MinMaxSeries retain, mix, overwrite, nan_a, nan_b;
  for (int i = 0; i < 50; ++i) {
    retain.append(i * 10, 0.f);
    mix.append(i * 10, 0.f);
    overwrite.append(i * 10, 1.f);
    nan_a.append(i, i == 3 ? std::numeric_limits<float>::quiet_NaN() : 0.5f);
    nan_b.append(i, i == 3 ? std::numeric_limits<float>::quiet_NaN() : 0.5f);
  }
  const std::vector<app::ui::CurveSeries> s = {{&retain, "retain"}, {&mix, "mix"}, {&overwrite, "overwrite"}};
  CHECK(app::ui::coinciding_curves(s) == std::vector<int>{-1, 0, -1});
  CHECK(viz::same_points(nan_a, nan_b));
  CHECK_FALSE(viz::same_points(retain, overwrite));
  viz::MinMaxSeries shorter;
  shorter.append(0, 0.f);
  CHECK_FALSE(viz::same_points(retain, shorter));
  CHECK(app::ui::coinciding_curves({{&retain, "a"}, {nullptr, "b"}, {&mix, "c"}}) == std::vector<int>{-1, -1, 0});

  test::NullImGui nul(1200.f, 800.f);
  app::ui::CurveView v;
  for (int f = 0; f < 5; ++f) {
    ImGui::GetIO().MousePos = ImVec2(300.f, 100.f);  // hovered: the tooltip names "same as" too
    nul.frame([&] {
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImVec2(1200, 800));
      ImGui::Begin("dash");
      app::ui::draw_curves("types", "slot types", s, ImVec2(1100, 300), &v);
      ImGui::End();
    });
  }
}
#endif
