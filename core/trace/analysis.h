// Analysis of traces: slot types from writer attention, counts and fractions.
#pragma once
#include "core/trace/tracer.h"

namespace mnemo {

enum class SlotType : int8_t { kRetain = 0, kMix = 1, kOverwrite = 2 };
const char* slot_type_name(SlotType t);

// Self-attention mass per slot, mean over heads: writer_attn [B, H, k, 1+L] -> [B, k].
torch::Tensor writer_self_mass(const torch::Tensor& writer_attn);

// Slot types from writer attention [B, H, k, 1+L] -> int8 [B, k] (0 retain, 1 mix, 2 overwrite).
// Throws std::invalid_argument when thresholds are out of [0, 1] or overwrite_max > retain_min.
torch::Tensor classify_slots(const torch::Tensor& writer_attn, const SlotThresholds& th);
// Same, from a self-mass tensor of any shape.
torch::Tensor classify_self_mass(const torch::Tensor& self_mass, const SlotThresholds& th);

struct SlotTypeCounts {
  int64_t retain = 0, mix = 0, overwrite = 0;
  int64_t total() const { return retain + mix + overwrite; }
};
SlotTypeCounts count_slot_types(const torch::Tensor& slot_type);

void validate_thresholds(const SlotThresholds& th);

}  // namespace mnemo
