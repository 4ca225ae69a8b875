// UI state the panels share, kept apart from ImGui so it can be tested as plain C++:
// the selected slot (one selection, highlighted by every panel), the slot-type thresholds
// with the classification they imply, the writer-attention head, and sorted slot orders.
#pragma once
#include "core/trace/slot_types.h"

#include <cstdint>
#include <vector>

namespace mnemo::app {

enum class SortOrder { kSlot, kValueAscending, kValueDescending };
// Slot indices 0..n-1 ordered by `order` over values (ties by slot; NaN last).
std::vector<int> sorted_slots(const std::vector<float>& values, SortOrder order);

class ViewModel {
 public:
  // --- Selection: one slot or none (-1), shared by every panel. ---
  int selected_slot() const { return selected_; }
  bool is_selected(int slot) const { return slot >= 0 && slot == selected_; }
  // Selects `slot` when it is in 0..slots()-1, else clears the selection.
  void select_slot(int slot);
  // Selects `slot`, or clears the selection when it is already the selected one (a click).
  void toggle_slot(int slot);
  // Bumps on every selection change, so panels can scroll the selected slot into view once.
  uint64_t selection_version() const { return selection_version_; }

  // --- The shown step: number of slots and their self-attention mass. ---
  // A new slot count clears a selection that no longer exists; the mass is re-classified.
  void set_step(int slots, const std::vector<float>& self_mass);
  int slots() const { return slots_; }
  const std::vector<float>& self_mass() const { return self_mass_; }

  // --- Thresholds: changing one re-classifies at once. retain_min and overwrite_max are
  // clamped to [0,1]; moving one past the other drags the other along (overwrite_max <=
  // retain_min always holds, as core's validate_thresholds requires).
  const SlotThresholds& thresholds() const { return th_; }
  void set_retain_min(float v);
  void set_overwrite_max(float v);
  void set_thresholds(const SlotThresholds& th);
  const std::vector<SlotType>& slot_types() const { return types_; }
  SlotTypeCounts counts() const { return counts_; }
  // Bumps whenever slot_types() changes (new step or thresholds), for texture re-uploads.
  uint64_t types_version() const { return types_version_; }

  // --- Writer attention head: -1 = mean over heads. Out of range falls back to the mean. ---
  int head() const { return head_; }
  void set_head(int head, int heads);

 private:
  void classify();

  int selected_ = -1;
  uint64_t selection_version_ = 0;
  int slots_ = 0;
  std::vector<float> self_mass_;
  SlotThresholds th_;
  std::vector<SlotType> types_;
  SlotTypeCounts counts_;
  uint64_t types_version_ = 0;
  int head_ = -1;
};

}  // namespace mnemo::app
