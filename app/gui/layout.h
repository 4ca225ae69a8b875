// Default window placement, computed from the work area (the viewport under the menu bar)
// so the panels tile 1920x1080 and still fit 1280x720. Used with ImGuiCond_FirstUseEver
// (imgui.ini wins afterwards) and by View > Reset layout.
#pragma once
#include "app/panels/panels.h"

#include <imgui.h>

namespace mnemo::app {

struct PanelRect {
  ImVec2 pos, size;
};

// Columns: left 26% (Controls over Document), middle 46% (Writer attention over Slot
// timeline), right 28% (Slot types, Forgetting, Memory). The Gallery floats in the middle.
PanelRect default_panel_rect(PanelId id, ImVec2 work_pos, ImVec2 work_size);

// `r` scaled from an old display size to a new one, then kept inside the new display.
PanelRect rescale_rect(const PanelRect& r, ImVec2 old_display, ImVec2 new_display, ImVec2 work_pos);

}  // namespace mnemo::app
