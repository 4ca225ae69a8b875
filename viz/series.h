// A growing (x, y) series for live curves: min/max per pixel column in O(columns · log n)
// through a pyramid of block minima/maxima, nearest-point lookup for hover, and the
// indices of NaN/Inf points so they are drawn as markers instead of being dropped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace mnemo::viz {

class MinMaxSeries {
 public:
  // x must be non-decreasing (training steps, segments). Amortised O(log n).
  void append(double x, float y);
  void clear();
  size_t size() const { return xs_.size(); }
  bool empty() const { return xs_.empty(); }
  double x(size_t i) const { return xs_[i]; }
  float y(size_t i) const { return ys_[i]; }
  // Indices of points whose y is NaN or ±Inf, ascending.
  const std::vector<size_t>& non_finite() const { return bad_; }

  struct Column {
    float min = std::numeric_limits<float>::quiet_NaN();  // NaN when the column has no finite point
    float max = std::numeric_limits<float>::quiet_NaN();
    size_t first = 0, last = 0;  // index range [first, last) of the points in the column
    bool has_points() const { return last > first; }
    bool has_finite() const { return min == min; }
  };
  // The visible range [x0, x1] split into `n` equal-width columns; each gets the min and
  // max of its finite points. At most 2 drawn points per column, whatever the size.
  std::vector<Column> columns(double x0, double x1, int n) const;
  // min/max of the finite points with index in [a, b). NaN/NaN when there are none.
  void range_min_max(size_t a, size_t b, float* lo, float* hi) const;
  // Index of the point whose x is nearest to `x` (size() when empty).
  size_t nearest(double x) const;

 private:
  std::vector<double> xs_;
  std::vector<float> ys_;
  // levels_[k][j]: min/max over points [j·2^(k+1), (j+1)·2^(k+1)); infinities when empty.
  std::vector<std::vector<float>> mins_, maxs_;
  std::vector<size_t> bad_;
};

// Whether a and b hold the same points: equal x, y equal to 1e-6 relative (NaN matches NaN,
// an infinity the same infinity). Stops at the first difference. Live curves draw a series
// that coincides with an earlier one as marks on top of it (app/gui/panels/widgets/curves.h),
// as make_lines does (viz/charts.h coinciding_series).
bool same_points(const MinMaxSeries& a, const MinMaxSeries& b);

}  // namespace mnemo::viz
