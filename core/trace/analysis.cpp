#include "core/trace/analysis.h"

#include <stdexcept>
#include <string>

namespace mnemo {

torch::Tensor writer_self_mass(const torch::Tensor& writer_attn) {
  TORCH_CHECK(writer_attn.dim() == 4, "writer_attn must be [B, H, k, 1+L], got ", writer_attn.sizes());
  return writer_attn.select(3, 0).to(torch::kFloat32).mean(1);
}

torch::Tensor classify_self_mass(const torch::Tensor& self_mass, const SlotThresholds& th) {
  validate_thresholds(th);
  auto m = self_mass.to(torch::kFloat32);
  auto out = torch::ones(m.sizes(), torch::TensorOptions().dtype(torch::kInt8).device(m.device()));
  out.masked_fill_(m >= th.retain_min, static_cast<int8_t>(SlotType::kRetain));
  // A slot that satisfies both (only possible when the thresholds are equal) counts as retain.
  out.masked_fill_((m <= th.overwrite_max) & (m < th.retain_min), static_cast<int8_t>(SlotType::kOverwrite));
  return out;
}

torch::Tensor classify_slots(const torch::Tensor& writer_attn, const SlotThresholds& th) {
  return classify_self_mass(writer_self_mass(writer_attn), th);
}

SlotTypeCounts count_slot_types(const torch::Tensor& slot_type) {
  auto t = slot_type.to(torch::kCPU).to(torch::kInt64).flatten();
  SlotTypeCounts c;
  auto acc = t.accessor<int64_t, 1>();
  for (int64_t i = 0; i < t.size(0); ++i) {
    if (acc[i] == 0) ++c.retain;
    else if (acc[i] == 1) ++c.mix;
    else ++c.overwrite;
  }
  return c;
}

}  // namespace mnemo
