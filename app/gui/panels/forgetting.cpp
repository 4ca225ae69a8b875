// Forgetting: ||v_bias|| per slot (the bias the memory is normalised towards), as a
// sortable table with inline bars; a row click selects the slot everywhere.
#include "app/gui/panels/panels.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

void ForgettingPanel::draw(PanelContext& ctx) {
  const auto& step = ctx.view.step;
  if (!step || step->memformer.forget_norm.empty()) {
    ImGui::TextDisabled(step ? "This model has no forgetting vector (forgetting off, or another model)."
                             : "Step to a segment to see the forgetting vectors.");
    return;
  }
  const auto& v = step->memformer.forget_norm;
  float vmax = 0.f;
  for (float x : v)
    if (std::isfinite(x)) vmax = std::max(vmax, x);
  ImGui::Text("||v_bias|| of %zu slots, max %.4f", v.size(), vmax);
  ui::help_marker(
      "Memformer's biased memory normalisation: each slot is normalised after adding v_bias.\n"
      "A large ||v_bias|| pulls the slot towards a fixed vector each step: it forgets faster.\n"
      "Click a header to sort.");
  export_button(ctx, PanelId::kForgetting);

  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("##forget", 3, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("slot", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_WidthFixed,
                          ImGui::CalcTextSize("00000").x);
  ImGui::TableSetupColumn("||v_bias||", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("||v_bias||").x + 18.f);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs()) {
    if (specs->SpecsDirty && specs->SpecsCount > 0) {
      const auto& s = specs->Specs[0];
      order_ = s.ColumnIndex == 0 ? SortOrder::kSlot
               : (s.SortDirection == ImGuiSortDirection_Descending ? SortOrder::kValueDescending : SortOrder::kValueAscending);
      specs->SpecsDirty = false;
    }
  }
  if (sorted_for_ != step || sorted_order_ != order_ || rows_.size() != v.size()) {
    rows_ = sorted_slots(v, order_);
    sorted_for_ = step;
    sorted_order_ = order_;
  }
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  scroll_selected_row_into_view(ctx, rows_, row_h, &scrolled_selection_);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()), row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const int slot = rows_[static_cast<size_t>(r)];
      const float x = v[static_cast<size_t>(slot)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (slot_row_label(ctx, slot)) {
        ImGui::BeginTooltip();
        ImGui::Text("slot %d: ||v_bias|| = %.6f", slot, x);
        slot_tooltip_lines(ctx, slot);
        ImGui::EndTooltip();
      }
      ImGui::TableNextColumn();
      value_cell(x);
      ImGui::TableNextColumn();
      // One neutral colour: the bar is a magnitude, not a slot type.
      ui::inline_bar(vmax > 0.f && std::isfinite(x) ? x / vmax : 0.f,
                          ctx.vm.is_selected(slot) ? IM_COL32(255, 214, 10, 220) : IM_COL32(90, 150, 220, 210),
                          ImGui::GetTextLineHeight() - 2.f);
    }
  }
  ImGui::EndTable();
}

}  // namespace mnemo::app
