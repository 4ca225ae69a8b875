// Default window placement, computed from the work area (the viewport under the menu bar)
// so the panels tile 1920x1080 and still fit 1280x720. Used with ImGuiCond_FirstUseEver
// (imgui.ini wins afterwards) and by View > Reset layout.
#pragma once
#include "app/gui/panels/registry.h"  // PanelRect, LayoutHint, each panel's place

#include <imgui.h>

namespace mnemo::app {

// Which families' panels to place: the view's, and side by side also `b`'s (may be null).
LayoutHint layout_hint(const PublishedView& s, const PublishedView* b = nullptr);

// Columns: left 26% (Controls over Document), middle 46%, right 28%; each panel's place in
// them is its registry entry's (app/gui/panels/registry.cpp). With a followed training
// session the Dashboard takes the lower 46 % and the rest tile the top as usual.
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
