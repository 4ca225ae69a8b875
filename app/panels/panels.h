// The desktop app's panels, one class per file in app/panels/ (DESIGN §7). A panel draws
// its content into the current ImGui window (the shell owns Begin/End, so the gallery can
// draw the same panels into child regions) from a PanelContext, and keeps only
// presentation state of its own (textures, sort order, scroll); the selected slot and the
// thresholds live in the shared ViewModel. Contract for every draw(): call between
// ImGui::NewFrame and ImGui::Render, inside a window; it never blocks on the model.
#pragma once
#include "app/gui/controller.h"
#include "app/gui/session.h"
#include "app/view_model.h"
#include "viz/ui/heatmap.h"
#include "viz/ui/texture.h"

#include <imgui.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

enum class PanelId { kControls, kDocument, kWriterAttention, kSlotTypes, kForgetting, kMemory, kTimeline, kGallery };
inline constexpr int kPanelCount = 8;
// Window title (also its imgui.ini key) and the base name of its exported files.
const char* panel_title(PanelId id);
const char* panel_file_name(PanelId id);

// Play state shared by the Controls panel and the keyboard (Space).
struct Transport {
  bool playing = false;
  float speed = 4.f;  // segments per second
};

// What panels ask of the shell (handled after the frame's panels are drawn).
struct ShellRequests {
  bool open_dialog = false;        // the Ctrl+O dialog
  int export_panel = -1;           // a PanelId to export
  std::vector<std::string> errors; // popups
};

struct PanelContext {
  const SessionView& session;
  ViewModel& vm;
  viz::ui::TextureApi& textures;
  Controller& control;
  Transport& transport;
  ShellRequests& requests;
  ImFont* mono = nullptr;  // document font (monospace)
  bool preview = false;    // drawn in the gallery: no model commands, no export
};

// Slot-type colours shared by every panel (retain blue, mix grey, overwrite red, as the CLI figures).
ImU32 slot_type_color(SlotType t, int alpha = 255);
// A small "Export…" button at the right end of the current line (no-op in previews).
void export_button(PanelContext& ctx, PanelId id);
// Tooltip lines for a slot (its type and self mass) appended to the current tooltip.
void slot_tooltip_lines(const PanelContext& ctx, int slot);

class ControlsPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  void sync_fields(const SessionInfo& info);
  uint64_t synced_info_ = 0;
  int64_t slots_ = 0, segment_len_ = 0, heads_ = 0, layers_ = 0, dec_layers_ = 0, dim_ = 0;
  float temperature_ = 0.f;
  bool forgetting_ = true;
  uint64_t seed_ = 0;
  std::string checkpoint_;
  int slider_ = 0;
  bool slider_active_ = false;
};

class DocumentPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  uint64_t layout_info_ = 0;
  int layout_cols_ = 0;
  std::vector<int64_t> row_prefix_;  // visual rows before each line (size lines + 1)
  int64_t scrolled_to_ = -2;
  uint64_t scrolled_info_ = 0;
  bool tint_loss_ = false;
};

class WriterAttentionPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  viz::ui::HeatmapImage image_;
  viz::ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  int last_head_ = -2;
  int scale_ = 0, last_scale_ = -1;  // 0: 0..max, 1: min..max, 2: 0..1
  float vmin_ = 0.f, vmax_ = 1.f;
};

class SlotTypesPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  viz::ui::HeatmapImage strip_;
  uint64_t key_ = 0, last_types_ = ~uint64_t{0};
  std::vector<uint8_t> rgba_;
};

class ForgettingPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  SortOrder order_ = SortOrder::kSlot;
  std::vector<int> rows_;
  std::shared_ptr<const StepData> sorted_for_;
  SortOrder sorted_order_ = SortOrder::kSlot;
  uint64_t scrolled_selection_ = 0;
};

class MemoryPanel {
 public:
  void draw(PanelContext& ctx);

 private:
  viz::ui::HeatmapImage image_;
  viz::ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  int sort_column_ = 0;  // 0 slot, 1 norm, 2 drift
  SortOrder order_ = SortOrder::kSlot;
  std::vector<int> rows_;
  std::shared_ptr<const StepData> sorted_for_;
  int sorted_column_ = -1;
  SortOrder sorted_order_ = SortOrder::kSlot;
  std::vector<float> drift_;
  uint64_t scrolled_selection_ = 0;
};

class TimelinePanel {
 public:
  void draw(PanelContext& ctx);

 private:
  viz::ui::HeatmapImage image_;
  viz::ui::ColorbarImage colorbar_;
  uint64_t key_ = 0, last_visited_ = ~uint64_t{0}, last_info_ = ~uint64_t{0};
  std::vector<int64_t> segments_;   // column -> segment
  std::vector<float> values_;       // slots x columns
  std::vector<std::string> labels_;
  int slots_ = 0;
};

// Every panel on synthetic traces of a chosen size: the living documentation.
class GalleryPanel {
 public:
  GalleryPanel();
  ~GalleryPanel();
  void draw(PanelContext& ctx);
  // Sizes offered (slots x tokens); index into them.
  static int size_count();
  static const char* size_name(int i);
  void set_size(int i);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace mnemo::app
