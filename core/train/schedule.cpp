#include "core/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace mnemo {

const std::vector<std::string>& known_schedules() {
  static const std::vector<std::string> k = {"constant", "linear", "cosine"};
  return k;
}

double learning_rate_at(const ScheduleOptions& o, int64_t step) {
  if (step < o.warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup);
  if (o.kind == "constant") return o.lr;
  const double span = static_cast<double>(std::max<int64_t>(1, o.total - o.warmup));
  const double p = std::clamp(static_cast<double>(step - o.warmup) / span, 0.0, 1.0);
  const double lo = o.min_lr_ratio;
  if (o.kind == "linear") return o.lr * (1.0 - (1.0 - lo) * p);
  return o.lr * (lo + (1.0 - lo) * 0.5 * (1.0 + std::cos(M_PI * p)));
}

}  // namespace mnemo
