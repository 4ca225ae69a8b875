// Memformer slot types (docs/models.md#memformer, "Slot types"): a slot retains, mixes or
// overwrites by the self-attention mass of its writer attention (mean over heads). Plain
// C++ (no LibTorch), so the app's view model and panels can classify without tensors;
// core/trace/analysis.h has the tensor versions, which follow exactly the same rule.
#pragma once
#include <cstdint>
#include <vector>

namespace mnemo {

// retain: self >= retain_min; overwrite: self <= overwrite_max (and < retain_min); mix: between.
struct SlotThresholds {
  float retain_min = 0.9f;
  float overwrite_max = 0.1f;
};

enum class SlotType : int8_t { kRetain = 0, kMix = 1, kOverwrite = 2 };
const char* slot_type_name(SlotType t);

// Throws ConfigError (core/errors.h) when a threshold is outside [0, 1] or overwrite_max >
// retain_min.
void validate_thresholds(const SlotThresholds& th);

// The rule for one slot. NaN counts as mix (neither test holds); a mass that satisfies both
// tests (equal thresholds) counts as retain.
SlotType classify_mass(float self_mass, const SlotThresholds& th);

struct SlotTypeCounts {
  int64_t retain = 0, mix = 0, overwrite = 0;
  int64_t total() const { return retain + mix + overwrite; }
};
SlotTypeCounts count_slot_types(const std::vector<SlotType>& types);

}  // namespace mnemo
