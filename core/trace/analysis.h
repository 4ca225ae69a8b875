// Analysis of traces: slot types from writer attention, counts and fractions.
#pragma once
#include "core/trace/slot_types.h"
#include "core/trace/tracer.h"

namespace mnemo {

// Self-attention mass per slot, mean over heads: writer_attn [B, H, k, 1+L] -> [B, k].
torch::Tensor writer_self_mass(const torch::Tensor& writer_attn);

// Slot types from writer attention [B, H, k, 1+L] -> int8 [B, k] (0 retain, 1 mix, 2 overwrite).
// Throws ConfigError when thresholds are out of [0, 1] or overwrite_max > retain_min.
torch::Tensor classify_slots(const torch::Tensor& writer_attn, const SlotThresholds& th);
// Same, from a self-mass tensor of any shape.
torch::Tensor classify_self_mass(const torch::Tensor& self_mass, const SlotThresholds& th);

// Counts of an int8 slot-type tensor of any shape.
SlotTypeCounts count_slot_types(const torch::Tensor& slot_type);

}  // namespace mnemo
