#include "core/train/lm_metrics.h"

#include <cmath>
#include <limits>

namespace mnemo {

double bits_per_token(double nats_sum, double count) {
  if (!(count > 0)) return std::numeric_limits<double>::quiet_NaN();
  return nats_sum / count / std::log(2.0);
}

double perplexity(double nats_sum, double count) {
  if (!(count > 0)) return std::numeric_limits<double>::quiet_NaN();
  return std::exp(nats_sum / count);
}

}  // namespace mnemo
