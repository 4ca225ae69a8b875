// Slot effects (docs/gui.md#slot-effects): what each memory entry did for the shown step's
// predictions, ranked — the bits they cost more with the entry removed from the carried memory
// (reset to the initial memory, or zeroed), the every-entry-at-once figure and the single
// entries' sum side by side. Computed on request by the model's thread
// (Controller::compute_slot_effects); a row click selects the entry everywhere (the Document
// panel's slot-effect tint follows it).
#pragma once
#include "app/gui/panels/panels.h"

namespace mnemo::app {

class SlotEffectsPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // The shown step's slot effects, or null (none computed, or another step's).
  static const SlotEffects* shown(const PublishedView& s);

 private:
  int ablation_ = 0;  // 0: reset, 1: zeroed
};

}  // namespace mnemo::app
