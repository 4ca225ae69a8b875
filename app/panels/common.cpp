#include "app/panels/panels.h"

#include <cstdio>

namespace mnemo::app {

const char* panel_title(PanelId id) {
  switch (id) {
    case PanelId::kControls: return "Controls";
    case PanelId::kDocument: return "Document";
    case PanelId::kWriterAttention: return "Writer attention";
    case PanelId::kSlotTypes: return "Slot types";
    case PanelId::kForgetting: return "Forgetting";
    case PanelId::kMemory: return "Memory";
    case PanelId::kTimeline: return "Slot timeline";
    case PanelId::kGallery: return "Gallery";
  }
  return "?";
}

const char* panel_file_name(PanelId id) {
  switch (id) {
    case PanelId::kControls: return "all";
    case PanelId::kDocument: return "document";
    case PanelId::kWriterAttention: return "writer_attention";
    case PanelId::kSlotTypes: return "slot_types";
    case PanelId::kForgetting: return "forgetting";
    case PanelId::kMemory: return "memory";
    case PanelId::kTimeline: return "slot_timeline";
    case PanelId::kGallery: return "gallery";
  }
  return "panel";
}

ImU32 slot_type_color(SlotType t, int alpha) {
  switch (t) {
    case SlotType::kRetain: return IM_COL32(44, 123, 182, alpha);
    case SlotType::kMix: return IM_COL32(171, 171, 171, alpha);
    case SlotType::kOverwrite: return IM_COL32(215, 48, 39, alpha);
  }
  return IM_COL32(255, 0, 255, alpha);
}

void export_button(PanelContext& ctx, PanelId id) {
  const char* label = "Export\xE2\x80\xA6";  // Export…
  const float w = ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.f;
  // Right-aligned on the current line, or on a line of its own when the line is full.
  ImGui::SameLine();
  const float x = ImGui::GetWindowContentRegionMax().x - w;
  if (x >= ImGui::GetCursorPosX()) ImGui::SetCursorPosX(x);
  else ImGui::NewLine();
  ImGui::BeginDisabled(ctx.preview || !ctx.session.step);
  if (ImGui::SmallButton(label)) ctx.requests.export_panel = static_cast<int>(id);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Write this panel as PNG (2x), SVG and CSV (Ctrl+E exports the focused panel)");
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

}  // namespace mnemo::app
