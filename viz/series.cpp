#include "viz/series.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mnemo::viz {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
}

bool same_points(const MinMaxSeries& a, const MinMaxSeries& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.x(i) != b.x(i)) return false;
    const float u = a.y(i), v = b.y(i);
    if (!std::isfinite(u) || !std::isfinite(v)) {
      if (!((std::isnan(u) && std::isnan(v)) || u == v)) return false;
    } else if (std::fabs(u - v) > 1e-6f * std::max(1.0f, std::max(std::fabs(u), std::fabs(v)))) {
      return false;
    }
  }
  return true;
}

void MinMaxSeries::clear() {
  xs_.clear();
  ys_.clear();
  mins_.clear();
  maxs_.clear();
  bad_.clear();
}

void MinMaxSeries::append(double x, float y) {
  if (!xs_.empty() && x < xs_.back()) throw std::invalid_argument("MinMaxSeries: x must be non-decreasing");
  const size_t i = xs_.size();
  xs_.push_back(x);
  ys_.push_back(y);
  if (!std::isfinite(y)) bad_.push_back(i);
  // Recompute the block that holds i on every level from the level below (level 0 from
  // the raw points), creating a level once the series is long enough to fill one block.
  auto leaf = [&](size_t idx, float* mn, float* mx) {
    if (idx < ys_.size() && std::isfinite(ys_[idx])) {
      *mn = std::min(*mn, ys_[idx]);
      *mx = std::max(*mx, ys_[idx]);
    }
  };
  for (size_t k = 0; (size_t{2} << k) <= xs_.size() || k < mins_.size(); ++k) {
    if (k >= mins_.size()) {
      mins_.emplace_back();
      maxs_.emplace_back();
    }
    const size_t j = i / (size_t{2} << k);
    if (j >= mins_[k].size()) {
      mins_[k].resize(j + 1, kInf);
      maxs_[k].resize(j + 1, -kInf);
    }
    float mn = kInf, mx = -kInf;
    if (k == 0) {
      leaf(2 * j, &mn, &mx);
      leaf(2 * j + 1, &mn, &mx);
    } else {
      for (size_t c : {2 * j, 2 * j + 1}) {
        if (c < mins_[k - 1].size()) {
          mn = std::min(mn, mins_[k - 1][c]);
          mx = std::max(mx, maxs_[k - 1][c]);
        }
      }
    }
    mins_[k][j] = mn;
    maxs_[k][j] = mx;
  }
}

void MinMaxSeries::range_min_max(size_t a, size_t b, float* lo, float* hi) const {
  float mn = kInf, mx = -kInf;
  b = std::min(b, ys_.size());
  while (a < b) {
    // The largest aligned, complete block that starts at a and ends by b.
    size_t k = 0;
    while (k < mins_.size() && a % (size_t{2} << k) == 0 && a + (size_t{2} << k) <= b) ++k;
    if (k == 0) {
      if (std::isfinite(ys_[a])) {
        mn = std::min(mn, ys_[a]);
        mx = std::max(mx, ys_[a]);
      }
      a += 1;
    } else {
      const size_t block = size_t{2} << (k - 1);
      mn = std::min(mn, mins_[k - 1][a / block]);
      mx = std::max(mx, maxs_[k - 1][a / block]);
      a += block;
    }
  }
  const bool any = mn <= mx;
  *lo = any ? mn : std::numeric_limits<float>::quiet_NaN();
  *hi = any ? mx : std::numeric_limits<float>::quiet_NaN();
}

std::vector<MinMaxSeries::Column> MinMaxSeries::columns(double x0, double x1, int n) const {
  std::vector<Column> out(static_cast<size_t>(std::max(n, 0)));
  if (n <= 0 || xs_.empty() || !(x1 > x0)) return out;
  const double w = (x1 - x0) / n;
  size_t a = static_cast<size_t>(std::lower_bound(xs_.begin(), xs_.end(), x0) - xs_.begin());
  for (int c = 0; c < n; ++c) {
    const double edge = c + 1 == n ? x1 : x0 + w * (c + 1);
    size_t b = c + 1 == n ? static_cast<size_t>(std::upper_bound(xs_.begin() + a, xs_.end(), edge) - xs_.begin())
                          : static_cast<size_t>(std::lower_bound(xs_.begin() + a, xs_.end(), edge) - xs_.begin());
    Column& col = out[static_cast<size_t>(c)];
    col.first = a;
    col.last = b;
    if (b > a) range_min_max(a, b, &col.min, &col.max);
    a = b;
  }
  return out;
}

size_t MinMaxSeries::nearest(double x) const {
  if (xs_.empty()) return 0;
  auto it = std::lower_bound(xs_.begin(), xs_.end(), x);
  if (it == xs_.end()) return xs_.size() - 1;
  size_t i = static_cast<size_t>(it - xs_.begin());
  if (i > 0 && std::abs(xs_[i - 1] - x) <= std::abs(xs_[i] - x)) return i - 1;
  return i;
}

}  // namespace mnemo::viz
