// The panel registry (docs/architecture.md#adding-a-panel): one table of every panel the app
// has, in View-menu order, each one line-group in app/gui/panels/registry.cpp (its PanelId is its
// place) with its title, file name, which models it applies to, how to make it (draw), what its Export writes,
// where the default layout puts it and what the gallery says of it. The shell's menu, windows
// and keyboard, side by side, the gallery, Export (one panel or all), tours and the default
// layout all iterate this table; nothing else lists the panels.
#pragma once
#include "app/figures/figures.h"
#include "app/view/published_view.h"
#include "app/gui/panels/panels.h"
#include "core/trace/slot_types.h"

#include <imgui.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

struct PanelRect {
  ImVec2 pos, size;
};

// Which model-specific panels the default layout makes room for (layout_hint in
// app/gui/shell/layout.h fills it from the session).
struct LayoutHint {
  bool memformer = true;  // Memformer panels (otherwise Attention, and MTN memory when mtn)
  bool hashed = false;    // Hash buckets
  bool mtn = false;       // MTN memory
  bool dashboard = false; // a training session is followed: the dashboard takes the lower part
  // Attention beside the Memformer panels: side by side of a Memformer and another family
  // (the middle column splits into Writer attention over Attention).
  bool attention = false;
  // Side by side (a second model shown): the memory panels in a row across the top, Controls
  // and the Document (a column per side) in a strip along the bottom (app/gui/shell/layout.h).
  bool compare = false;
  bool operator==(const LayoutHint& o) const {
    return memformer == o.memformer && hashed == o.hashed && mtn == o.mtn && dashboard == o.dashboard &&
           attention == o.attention && compare == o.compare;
  }
  bool operator!=(const LayoutHint& o) const { return !(*this == o); }
};

// The default layout's grid over the work area `p`, `s` (app/gui/shell/layout.cpp): columns
// left 26 %, middle 46 %, right the rest, and the row heights the panels share.
struct LayoutGrid {
  ImVec2 p, s;
  LayoutHint hint;
  float left = 0, mid = 0, right = 0;
  float controls_h = 0, writer_h = 0, types_h = 0, forget_h = 0;
  PanelRect at(float x, float y, float w, float h) const { return PanelRect{ImVec2(p.x + x, p.y + y), ImVec2(w, h)}; }
};

// What the panels' Export writes from besides the step: the selections of every panel.
struct PanelSelections {
  int head = -1;                       // writer attention head (-1 mean)
  SlotThresholds thresholds;
  int selected_slot = -1;              // highlighted in the heatmaps
  int attn_layer = 0;                  // Attention: index into StepData::attention.layers
  int attn_head = -1;                  // Attention: head (-1 mean)
  // The colour ranges the panels draw (exports use them and print them): writer attention
  // writer_vmin..writer_vmax, the attention map 0..attn_vmax; NaN: 0..the map's largest.
  float writer_vmin = NAN, writer_vmax = NAN, attn_vmax = NAN;
  std::string hash_path;               // Hash buckets: projection ("" = the first)
  int hash_table = 0;                  // Hash buckets: the table drawn as bars
};

// One panel's files: <base>*.{png,svg,csv} of the shown step of `view` (which has a step).
struct PanelExport {
  const PublishedView& view;
  const PanelSelections& sel;
  const std::string& base;
  const FigureFormats& fm;
  std::vector<std::string>& out;  // paths written are appended
};

struct PanelDef {
  const char* title;      // window title (its imgui.ini key) and View-menu entry
  const char* file_name;  // exported files' base name; what tour files call it
  bool open_by_default;
  ImGuiWindowFlags window_flags;  // e.g. no scrollbar for maps that fill their window
  // Draws the model's step: side by side draws it once per model, tours may name it, and
  // File > Export all panels writes it (Controls, Gallery and the Dashboard do not).
  bool per_model;
  // Whether it applies to the view's model (null: always); when not, *why (if non-null)
  // says what it needs.
  bool (*applies)(const PublishedView& s, std::string* why);
  std::unique_ptr<Panel> (*make)();
  void (*write)(const PanelExport& e);   // its Export (null: nothing of its own)
  PanelRect (*place)(const LayoutGrid& g);  // its window in the default layout
  // The gallery (synthetic traces): its header (null: the title), the line under it, the
  // height in text lines and its place (0: not in the gallery, else ascending).
  const char* gallery_title;
  const char* about;
  float gallery_lines;
  int gallery_rank;
};

// Every panel, in View-menu order: entry i is PanelId(i).
const std::vector<PanelDef>& panel_registry();
const PanelDef& panel_def(PanelId id);
// The PanelId of an entry of panel_registry().
PanelId panel_id(const PanelDef& d);
// The gallery's panels in their order.
std::vector<const PanelDef*> gallery_panels();

}  // namespace mnemo::app
