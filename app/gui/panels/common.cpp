#include "app/gui/panels/panels.h"

#include <algorithm>

#include "app/figures/palette.h"
#include "app/gui/panels/widgets/widgets.h"

#include <cmath>
#include <cstdio>

namespace mnemo::app {

ImU32 slot_type_color(SlotType t, int alpha) { return ui::im_color(palette::slot_type(t), alpha); }

void export_button(PanelContext& ctx, PanelId id) {
  const char* label = "Export\xE2\x80\xA6";  // Export…
  const float w = ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.f;
  // Right-aligned on the current line, or on a line of its own when the line is full.
  ImGui::SameLine();
  const float x = ImGui::GetWindowContentRegionMax().x - w;
  if (x >= ImGui::GetCursorPosX()) ImGui::SetCursorPosX(x);
  else ImGui::NewLine();
  ImGui::BeginDisabled(ctx.preview || !ctx.view.step);
  if (ImGui::SmallButton(label)) ctx.requests.export_panel = static_cast<int>(id);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Write this panel as PNG (2x), SVG and CSV (Ctrl+E exports the focused panel)");
}

bool slot_row_label(PanelContext& ctx, int slot) {
  char label[32];
  std::snprintf(label, sizeof label, "%d", slot);
  ImGui::PushID(slot);
  if (ImGui::Selectable(label, ctx.vm.is_selected(slot), ImGuiSelectableFlags_SpanAllColumns)) ctx.vm.toggle_slot(slot);
  const bool hovered = ImGui::IsItemHovered();
  ImGui::PopID();
  return hovered;
}

void value_cell(float x) {
  // Four decimals: a value that rounds to zero prints as 0.0000, not -0.0000 (1 - cos of an
  // unchanged slot is often -1e-7).
  if (std::isfinite(x)) ImGui::Text("%.4f", std::fabs(x) < 0.00005f ? 0.f : x);
  else ImGui::TextColored(ImVec4(1, 0, 1, 1), "%s", std::isnan(x) ? "nan" : "inf");
}

void slot_tooltip_lines(const PanelContext& ctx, int slot) {
  const auto& types = ctx.vm.slot_types();
  const auto& mass = ctx.vm.self_mass();
  if (slot >= 0 && static_cast<size_t>(slot) < types.size()) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(slot_type_color(types[static_cast<size_t>(slot)])), "%s",
                       slot_type_name(types[static_cast<size_t>(slot)]));
    ImGui::SameLine();
    ImGui::Text("(self mass %.4f)", mass[static_cast<size_t>(slot)]);
  }
}

void scroll_selected_row_into_view(const PanelContext& ctx, const std::vector<int>& rows, float row_h, uint64_t* scrolled) {
  if (*scrolled == ctx.vm.selection_version() || ctx.vm.selected_slot() < 0) return;
  *scrolled = ctx.vm.selection_version();
  auto it = std::find(rows.begin(), rows.end(), ctx.vm.selected_slot());
  if (it == rows.end()) return;
  const float y = static_cast<float>(it - rows.begin()) * row_h;
  if (y < ImGui::GetScrollY() || y > ImGui::GetScrollY() + ImGui::GetWindowHeight() - 3.f * row_h)
    ImGui::SetScrollY(std::max(0.f, y - 0.4f * ImGui::GetWindowHeight()));
}

}  // namespace mnemo::app
