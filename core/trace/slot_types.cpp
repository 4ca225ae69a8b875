#include "core/trace/slot_types.h"

#include "core/errors.h"

#include <string>

namespace mnemo {

const char* slot_type_name(SlotType t) {
  switch (t) {
    case SlotType::kRetain: return "retain";
    case SlotType::kMix: return "mix";
    case SlotType::kOverwrite: return "overwrite";
  }
  return "?";
}

void validate_thresholds(const SlotThresholds& th) {
  if (!(th.retain_min >= 0.f && th.retain_min <= 1.f))
    throw ConfigError("slot thresholds: retain_min must be in [0, 1], got " + std::to_string(th.retain_min));
  if (!(th.overwrite_max >= 0.f && th.overwrite_max <= 1.f))
    throw ConfigError("slot thresholds: overwrite_max must be in [0, 1], got " + std::to_string(th.overwrite_max));
  if (th.overwrite_max > th.retain_min)
    throw ConfigError("slot thresholds: overwrite_max (" + std::to_string(th.overwrite_max) +
                      ") must not exceed retain_min (" + std::to_string(th.retain_min) + ")");
}

SlotType classify_mass(float m, const SlotThresholds& th) {
  if (m >= th.retain_min) return SlotType::kRetain;
  if (m <= th.overwrite_max) return SlotType::kOverwrite;
  return SlotType::kMix;
}

SlotTypeCounts count_slot_types(const std::vector<SlotType>& types) {
  SlotTypeCounts c;
  for (SlotType t : types) {
    if (t == SlotType::kRetain) ++c.retain;
    else if (t == SlotType::kMix) ++c.mix;
    else ++c.overwrite;
  }
  return c;
}

}  // namespace mnemo
