// Default window placement, computed from the work area (the viewport under the menu bar)
// so the panels tile 1920x1080 and still fit 1280x720. Used with ImGuiCond_FirstUseEver
// (imgui.ini wins afterwards) and by View > Reset layout.
#pragma once
#include "app/gui/panels/panels.h"

#include <imgui.h>

namespace mnemo::app {

struct PanelRect {
  ImVec2 pos, size;
};

// Which model-specific panels the layout makes room for.
struct LayoutHint {
  bool memformer = true;  // Memformer panels (otherwise Attention, and MTN memory when mtn)
  bool hashed = false;    // Hash buckets
  bool mtn = false;       // MTN memory
  bool dashboard = false; // a training session is followed: the dashboard takes the lower part
  bool operator==(const LayoutHint& o) const {
    return memformer == o.memformer && hashed == o.hashed && mtn == o.mtn && dashboard == o.dashboard;
  }
  bool operator!=(const LayoutHint& o) const { return !(*this == o); }
};
LayoutHint layout_hint(const SessionView& s);

// Columns: left 26% (Controls over Document), middle 46%, right 28%. Memformer: Writer
// attention over Slot timeline in the middle (Slot timeline | Hash buckets when hashed),
// Slot types, Forgetting, Memory on the right. Other models: Attention over the middle and
// right columns; with MTN memory, that in the middle and Attention on the right; Hash
// buckets take the right column (its lower part under MTN's Attention). The Gallery floats
// in the middle.
PanelRect default_panel_rect(PanelId id, ImVec2 work_pos, ImVec2 work_size, LayoutHint hint = {});

// A tour stop's layout: the caption across the bottom (a quarter of the work area, at least
// 150 px, taller when its text needs it: `caption_wanted` px, up to half the work area), the
// stop's `count` panels tiled above it in one row when there are up to three, else in two
// rows. The Document panel (`document_index`, -1 when the stop has none) becomes a strip
// across the whole width, only as tall as its text wants (`document_wanted` px), when that is
// under half the height the tiling would give it; the other panels tile the rest.
struct TourLayout {
  float caption_wanted = 0.f;
  int document_index = -1;
  float document_wanted = 0.f;
};
PanelRect tour_caption_rect(ImVec2 work_pos, ImVec2 work_size, float caption_wanted = 0.f);
PanelRect tour_panel_rect(int index, int count, ImVec2 work_pos, ImVec2 work_size, const TourLayout& how = {});

// `r` scaled from an old display size to a new one, then kept inside the new display.
PanelRect rescale_rect(const PanelRect& r, ImVec2 old_display, ImVec2 new_display, ImVec2 work_pos);

}  // namespace mnemo::app
