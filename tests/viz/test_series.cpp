// viz/series: min/max columns against brute force, NaN/Inf kept as markers.
#include "viz/series.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using mnemo::viz::MinMaxSeries;

TEST_CASE("series: range min/max equals brute force on random ranges, NaN and Inf excluded but listed") {
  MinMaxSeries s;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> ys;
  for (int i = 0; i < 5000; ++i) {
    float y = nd(rng);
    if (i % 997 == 13) y = std::nanf("");
    if (i == 2500) y = INFINITY;
    ys.push_back(y);
    s.append(i * 0.5, y);
  }
  CHECK(s.non_finite().size() == 7);  // 6 NaN (i % 997 == 13) and one +Inf
  CHECK(s.non_finite()[0] == 13);
  std::uniform_int_distribution<size_t> ud(0, ys.size());
  for (int trial = 0; trial < 2000; ++trial) {
    size_t a = ud(rng), b = ud(rng);
    if (a > b) std::swap(a, b);
    float lo, hi;
    s.range_min_max(a, b, &lo, &hi);
    float blo = INFINITY, bhi = -INFINITY;
    for (size_t i = a; i < b; ++i)
      if (std::isfinite(ys[i])) {
        blo = std::min(blo, ys[i]);
        bhi = std::max(bhi, ys[i]);
      }
    if (blo > bhi) {
      CHECK(std::isnan(lo));
    } else {
      CHECK(lo == blo);
      CHECK(hi == bhi);
    }
  }
}

TEST_CASE("series: columns partition the points and give at most two values each") {
  MinMaxSeries s;
  for (int i = 0; i < 1000; ++i) s.append(i, static_cast<float>(i % 10));
  auto cols = s.columns(0, 999, 100);
  REQUIRE(cols.size() == 100);
  size_t covered = 0;
  for (size_t c = 0; c < cols.size(); ++c) {
    if (c > 0) CHECK(cols[c].first == cols[c - 1].last);
    covered += cols[c].last - cols[c].first;
    CHECK(cols[c].min == 0.f);
    CHECK(cols[c].max == 9.f);
  }
  CHECK(covered == 1000);
  CHECK(s.nearest(10.4) == 10);
  CHECK(s.nearest(-5) == 0);
  CHECK(s.nearest(5000) == 999);
  CHECK_THROWS_AS(s.append(3, 1.f), std::invalid_argument);
  auto zoomed = s.columns(100, 110, 1000);  // more columns than points: empty columns allowed
  size_t with = 0;
  for (auto& c : zoomed) with += c.has_points() ? 1 : 0;
  CHECK(with == 11);
}
