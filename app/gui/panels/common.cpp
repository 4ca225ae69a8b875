#include "app/gui/panels/panels.h"

#include <algorithm>

#include "app/figures/palette.h"
#include "app/gui/panels/widgets/widgets.h"

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
    case PanelId::kAttention: return "Attention";
    case PanelId::kHashBuckets: return "Hash buckets";
    case PanelId::kMtnMemory: return "MTN memory";
    case PanelId::kDashboard: return "Training dashboard";
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
    case PanelId::kAttention: return "attention";
    case PanelId::kHashBuckets: return "hash";
    case PanelId::kMtnMemory: return "mtn_memory";
    case PanelId::kDashboard: return "dashboard";
  }
  return "panel";
}

bool panel_applies(PanelId id, const SessionView& s, std::string* why) {
  const std::string model = s.info ? s.info->cfg.model : "";
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  switch (id) {
    case PanelId::kControls:
    case PanelId::kDocument:
    case PanelId::kGallery:
    case PanelId::kDashboard: return true;  // shows how to open a session when none is
    case PanelId::kWriterAttention:
    case PanelId::kSlotTypes:
    case PanelId::kForgetting:
    case PanelId::kMemory:
    case PanelId::kTimeline:
      if (!s.info || model == "memformer") return true;
      return no("A Memformer panel (writer attention, slots); this model is " + model +
                ". Start with --model memformer to see it.");
    case PanelId::kAttention:
      if (s.info && model != "memformer") return true;
      return no(s.info ? "Attention maps with memory blocks are drawn for rmt, rmt-write-only, trxl, trxl-rmt, transformer "
                         "and the MTN models; Memformer's is the Writer attention panel."
                       : "Open a document first.");
    case PanelId::kHashBuckets:
      if (s.info && s.info->cfg.linear == "hashed") return true;
      return no("Needs a model with hashed projections (MemoryFormer): start with --linear hashed, or set "
                "\"linear\": \"hashed\" in the config.");
    case PanelId::kMtnMemory:
      if (s.info && model == "mtn") return true;
      return no("Kept tokens exist only in the Memory Transformer Network: start with --model mtn "
                "(mtn-naive's memory is learned vectors, no-memory has none).");
  }
  return true;
}

ImU32 slot_type_color(SlotType t, int alpha) { return ui::im_color(palette::slot_type(t), alpha); }

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
