#include "app/gui/model/view_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mnemo::app {

std::vector<int> sorted_slots(const std::vector<float>& values, SortOrder order) {
  std::vector<int> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  if (order == SortOrder::kSlot) return idx;
  const bool desc = order == SortOrder::kValueDescending;
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    const float va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na || nb) return !na && nb;  // NaN last
    return desc ? va > vb : va < vb;
  });
  return idx;
}

void ViewModel::select_slot(int slot) {
  const int s = slot >= 0 && slot < slots_ ? slot : -1;
  if (s == selected_) return;
  selected_ = s;
  ++selection_version_;
}

void ViewModel::toggle_slot(int slot) { select_slot(slot == selected_ ? -1 : slot); }

void ViewModel::set_step(int slots, const std::vector<float>& self_mass) {
  slots_ = std::max(0, slots);
  if (selected_ >= slots_) {
    selected_ = -1;
    ++selection_version_;
  }
  self_mass_ = self_mass;
  classify();
}

void ViewModel::set_retain_min(float v) {
  SlotThresholds th = th_;
  th.retain_min = std::min(1.f, std::max(0.f, v));
  if (th.overwrite_max > th.retain_min) th.overwrite_max = th.retain_min;
  set_thresholds(th);
}

void ViewModel::set_overwrite_max(float v) {
  SlotThresholds th = th_;
  th.overwrite_max = std::min(1.f, std::max(0.f, v));
  if (th.retain_min < th.overwrite_max) th.retain_min = th.overwrite_max;
  set_thresholds(th);
}

void ViewModel::set_thresholds(const SlotThresholds& th) {
  SlotThresholds c = th;
  c.retain_min = std::isfinite(c.retain_min) ? std::min(1.f, std::max(0.f, c.retain_min)) : th_.retain_min;
  c.overwrite_max = std::isfinite(c.overwrite_max) ? std::min(1.f, std::max(0.f, c.overwrite_max)) : th_.overwrite_max;
  if (c.overwrite_max > c.retain_min) c.overwrite_max = c.retain_min;
  if (c.retain_min == th_.retain_min && c.overwrite_max == th_.overwrite_max) return;
  th_ = c;
  classify();
}

void ViewModel::classify() {
  types_.resize(self_mass_.size());
  for (size_t i = 0; i < self_mass_.size(); ++i) types_[i] = classify_mass(self_mass_[i], th_);
  counts_ = count_slot_types(types_);
  ++types_version_;
}

void ViewModel::set_head(int head, int heads) { head_ = head >= 0 && head < heads ? head : -1; }

}  // namespace mnemo::app
