// Learning-rate schedules: linear warm-up, then constant, linear or cosine decay.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo {

struct ScheduleOptions {
  std::string kind = "cosine";  // "constant" | "linear" | "cosine"
  double lr = 1e-3;             // peak learning rate
  int64_t warmup = 0;           // steps of linear warm-up from lr/warmup to lr
  int64_t total = 1;            // steps of the whole run; decay ends here
  double min_lr_ratio = 0.0;    // decay floor as a fraction of lr
};

const std::vector<std::string>& known_schedules();

// Learning rate of optimizer step `step` (0-based: the first update uses step 0).
//   step < warmup:  lr * (step + 1) / warmup
//   after:          p = (step - warmup) / max(1, total - warmup), clamped to [0, 1]
//                   constant: lr; linear: lr * (1 - (1 - min) p);
//                   cosine: lr * (min + (1 - min) (1 + cos(pi p)) / 2)
double learning_rate_at(const ScheduleOptions& opt, int64_t step);

}  // namespace mnemo
