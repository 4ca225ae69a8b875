// Slot effects (docs/gui.md#slot-effects): what each memory entry did for the shown step's
// predictions — the entries x predicted tokens matrix of the bits each token cost more with the
// entry removed from the carried memory (reset to the initial memory, or zeroed; step
// --by-slot's figure, app/figures/slot_effects.h), then the entries ranked, the every-entry-at-
// once figure and the single entries' sum side by side. Computed on request by the model's
// thread (Controller::compute_slot_effects); a click on a matrix row or a ranking row selects
// the entry everywhere (the Document panel's slot-effect tint follows it).
#pragma once
#include "app/gui/panels/panels.h"

#include <memory>
#include <string>

namespace mnemo::app {

class SlotEffectsPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // The shown step's slot effects, or null (none computed, or another step's).
  static const SlotEffects* shown(const PublishedView& s);
  // The matrix's hover text for entry e and predicted token k (ablation a):
  // "slot 3, token 141 'p' (removed = reset): 4.686 bits saved | 0.1223 nats with it, 3.371 without".
  static std::string cell_text(const SlotEffects& fx, const Document& doc, size_t a, int64_t e, size_t k);
  // Where the matrix was drawn last frame (plot area, no labels) and the entry / token column
  // under the mouse there (-1 none): for tests, which hover and click it.
  ImVec2 matrix_min() const { return plot_min_; }
  ImVec2 matrix_max() const { return plot_max_; }
  int64_t hovered_entry() const { return hovered_entry_; }
  int hovered_token() const { return hovered_token_; }

 private:
  int ablation_ = 0;  // 0: reset, 1: zeroed
  ui::HeatmapImage image_;
  ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const SlotEffects> spec_of_;  // the effects (and ablation) spec_ was made from
  int spec_ablation_ = -1;
  viz::HeatmapSpec spec_;
  std::vector<int64_t> order_;  // matrix row -> entry (the ranking)
  ImVec2 plot_min_{}, plot_max_{};
  int64_t hovered_entry_ = -1;
  int hovered_token_ = -1;
};

}  // namespace mnemo::app
