// The desktop app's frame: main menu, the panel windows (default layout, rescaled when the
// display changes), keyboard shortcuts, play timing, and the modal dialogs (problems, open
// document, export). Platform-free: the GLFW loop (app/gui/app.cpp) and the null-backend
// test both drive it. Contract: call frame() once per ImGui frame, between NewFrame and
// Render, from the thread that owns the ImGui context.
#pragma once
#include "app/gui/model/controller.h"
#include "app/figures/compare.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/layout.h"
#include "app/gui/shell/model_picker.h"
#include "app/view/published_view.h"
#include "app/gui/model/tour.h"
#include "app/gui/platform/settings.h"
#include "app/gui/panels/dashboard.h"
#include "app/gui/panels/panels.h"
#include "app/gui/panels/registry.h"
#include "app/gui/model/view_model.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/panels/widgets/texture.h"

#include <deque>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

// The PanelId (as int) a tour names ("document", "writer_attention", ..., "controls"); -1 when none.
int panel_of_tour_name(const std::string& name);

class Worker;
// The screen part of `tour --check`: plays `tour` stop by stop as the app does, in an ImGui
// context of its own without a window (no display, no GPU), at `width` x `height` pixels and
// presenter `ui_scale`, on `worker`, and returns what Shell::tour_screen_problems finds at each
// settled stop, each as "stop N: ...". Throws InputError when a stop does not show in 10 minutes.
struct TourScreen {
  int width = 1600, height = 1000;
  float ui_scale = 1.f;
  std::string describe() const;  // "1280x720, presenter ui-scale 1.5"
};
std::vector<std::string> check_tour_screen(const Tour& tour, Worker& worker, const TourScreen& screen);

class Shell {
 public:
  // settings may be null (nothing remembered); log receives export reports (may be null).
  Shell(ui::TextureApi* textures, ui::UiFonts fonts, Settings* settings, std::ostream* log);

  // `compare` (may be null): a second model's view, stepped in lockstep (docs/gui.md#side-by-side);
  // `control` then steps both (a LockstepController).
  void frame(const ViewPtr& view, Controller& control, const ViewPtr& compare = nullptr);

  // A file dropped on the window: opened like File > Open.
  void drop_file(const std::string& path) { dropped_ = path; }
  // Problems to show as popups (worker errors, bad command-line input at run time).
  void push_error(const std::string& message) { errors_.push_back(message); }
  bool has_popup() const { return modal_ != Modal::kNone || !errors_.empty(); }
  const std::deque<std::string>& pending_errors() const { return errors_; }

  bool quit_requested() const { return quit_; }
  ViewModel& view_model() { return vm_; }
  Transport& transport() { return transport_; }
  void set_panel_open(PanelId id, bool open) { windows_.at(static_cast<size_t>(id)).open = open; }
  // The panels by their type (each made by its registry entry, app/gui/panels/registry.h).
  template <class P>
  P& panel(PanelId id) { return static_cast<P&>(*panels_[static_cast<size_t>(id)]); }
  template <class P>
  const P& panel(PanelId id) const { return static_cast<const P&>(*panels_[static_cast<size_t>(id)]); }
  GalleryPanel& gallery() { return panel<GalleryPanel>(PanelId::kGallery); }
  AttentionPanel& attention() { return panel<AttentionPanel>(PanelId::kAttention); }
  const AttentionPanel& attention() const { return panel<AttentionPanel>(PanelId::kAttention); }
  DocumentPanel& document_panel() { return panel<DocumentPanel>(PanelId::kDocument); }
  TimelinePanel& timeline() { return panel<TimelinePanel>(PanelId::kTimeline); }
  HashBucketsPanel& hash_buckets() { return panel<HashBucketsPanel>(PanelId::kHashBuckets); }
  const HashBucketsPanel& hash_buckets() const { return panel<HashBucketsPanel>(PanelId::kHashBuckets); }
  DashboardPanel& dashboard() { return panel<DashboardPanel>(PanelId::kDashboard); }
  const DashboardPanel& dashboard() const { return panel<DashboardPanel>(PanelId::kDashboard); }
  // Follows a training session in the dashboard (opened and laid out across the bottom);
  // replay (may be null) shows its recordings in the map panels.
  void open_dashboard(const std::string& dir, ReplayController* replay);
  // Exports the panel now in the background (as Ctrl+E followed by Export).
  void request_export(PanelId id) { requests_.export_panel = static_cast<int>(id); }
  // What Export (and File > Export all panels, or `gui --export`) asks for: the panel, the
  // selections of every panel, and a followed session's curves.
  ExportRequest export_request(PanelId panel, const ViewPtr& view, const std::string& dir) const;
  // File > Open model...: the zoo it lists (app/gui/model/zoo_catalog.h), and opening it.
  ModelPicker& model_picker() { return picker_; }
  void request_model_picker() { open_model_ = true; }

  // --- Guided tours (docs/gui.md#tours) ---
  // The tours the Tour menu offers (shipped ones) and where zoo names are found.
  void set_tours(std::vector<std::string> paths, std::string zoo_dir);
  // Plays `t` from its first stop: the stop's panels (and the caption panel) only, laid out
  // for it; arrows / PageUp / PageDown move between stops.
  void start_tour(Tour t);
  void stop_tour();
  TourPlayer& tour() { return tour_; }
  // The shown stop is complete: its model, document and segment are on screen and its
  // selection applied (tour export takes the screenshot then).
  bool tour_stop_shown(const PublishedView& s) const;
  // What the shown stop's screen gets wrong, once it is shown and settled (the screen part of
  // `tour --check`, tour exports, tests): a panel the stop names that is not drawn, lies outside
  // the display or under the caption, is smaller than its minimum (12 font heights wide; 6 text
  // lines tall for a map, the Document strip's own text) or must be scrolled to show its
  // content; and a caption whose text does not fit its panel (a scrollbar, a cut sentence).
  std::vector<std::string> tour_screen_problems(const PublishedView& s) const;

  // --- Presenter mode: full screen, UI scale 1.0-2.5, high-contrast colour map ---
  struct Presenter {
    bool fullscreen = false;
    float ui_scale = 1.f;         // fonts and line widths (the platform rebuilds the fonts)
    bool high_contrast = false;   // sequential maps in black -> white, heavier outlines
  };
  Presenter& presenter() { return presenter_; }
  void set_fonts(ui::UiFonts fonts) { fonts_ = fonts; }

  // --- Two models side by side (docs/gui.md#side-by-side) ---
  // Names shown over the two columns.
  void set_compare_labels(std::string a, std::string b) {
    label_a_ = std::move(a);
    label_b_ = std::move(b);
  }
  // File > Compare with model...: the weights file (or zoo name) asked for, once.
  bool take_compare_request(std::string* model);
  // One colour scale for both sides' attention maps (on by default): 0..the larger maximum of
  // the maps shown; compare_scale_max() is that value as last drawn (NaN: per side, or none).
  bool same_scale() const { return same_scale_; }
  float compare_scale_max() const { return compare_shared_max_; }
  // Side B's panel of type P (the registry's per-model panels), e.g. its Document panel.
  template <class P>
  P& panel_b(PanelId id) { return side_b_.panel<P>(id); }
  // Whether a panel is shown: it applies to A, or (side by side) to B.
  bool applies_here(PanelId id, const PublishedView& s) const;
  void set_same_scale(bool on) { same_scale_ = on; }
  bool show_difference() const { return show_diff_; }
  void set_show_difference(bool on) { show_diff_ = on; }

 private:
  enum class Modal { kNone, kError, kOpen, kExport, kModel, kTour, kCompare };
  // The dialogs that ask for a path (Open document, Open tour, Compare with model): a prompt,
  // the field, a list to pick from (a double-click picks and confirms), a note, the confirm
  // button and Cancel.
  struct PathDialog {
    const char* title;
    const char* prompt;
    const char* list_caption;  // null: no list
    const char* confirm;
    const char* note;          // "" for none
  };
  struct PathChoice {
    std::string shown, path;
  };
  enum class PathAnswer { kAsking, kConfirmed, kCancelled };
  PathAnswer ask_path(const PathDialog& d, std::string& field, const std::vector<PathChoice>& list, float wrap);
  void close_modal();  // modal_ = none, and the current popup closed
  void draw_menu(const PublishedView& s, Controller& control);
  void draw_panels(const PublishedView& s, Controller& control);
  void draw_tour_menu();
  void draw_caption(Controller& control);
  void apply_tour(const PublishedView& s, Controller& control);
  void draw_compare(PanelId id, PanelContext& ctx_a, Controller& control);
  void draw_difference(PanelId id, const PublishedView& a, const PublishedView& b);
  bool update_difference(PanelId id, const PublishedView& a, const PublishedView& b);
  void handle_keys(const PublishedView& s, Controller& control);
  void draw_modals(const ViewPtr& view, Controller& control);
  void open_path(const std::string& path, Controller& control);

  ui::TextureApi* textures_;
  ui::UiFonts fonts_;
  Settings* settings_;
  std::ostream* log_;
  ViewModel vm_;
  Transport transport_;
  ShellRequests requests_;
  std::shared_ptr<const StepData> synced_step_;
  std::shared_ptr<const SlotEffects> synced_fx_;  // the slot effects the selectable entries counted
  uint64_t synced_info_ = 0;

  std::vector<std::unique_ptr<Panel>> panels_;  // by PanelId, from the registry

  // Each panel's window, by PanelId: open (the registry's open_by_default at start), open
  // before a tour, and where it was last frame.
  struct PanelWindow {
    bool open = false;
    bool saved_open = false;
    bool have_rect = false;
    PanelRect last_rect;
    int drawn_frame = -1;         // ImGui's frame count when its window was last begun
    float scroll_max_y = 0.f;     // how far its content scrolled (0: it fits)
  };
  std::vector<PanelWindow> windows_;
  LayoutHint hint_;
  bool have_hint_ = false;
  ImVec2 last_display_{0, 0};
  bool reset_layout_ = false;
  PanelId focused_ = PanelId::kWriterAttention;
  double next_play_ = 0.0;
  bool quit_ = false;

  std::deque<std::string> errors_;
  Modal modal_ = Modal::kNone;
  std::string dropped_;
  std::string open_path_;
  std::string export_dir_;
  PanelId export_panel_ = PanelId::kControls;
  ModelPicker picker_;
  bool open_model_ = false;

  // Tours
  TourPlayer tour_;
  std::vector<std::string> tour_paths_;
  std::string zoo_dir_, tour_path_;
  bool open_tour_ = false, tour_layout_ = false;
  float caption_wanted_ = 0.f;  // the tour caption's height for its whole text (draw_caption, last frame)
  PanelRect caption_rect_;      // the caption panel last frame, and how far its text scrolled
  float caption_scroll_max_ = 0.f;
  int caption_frame_ = -1;
  // The caption's outline of stops shrinks to their numbers when the text would not fit its
  // panel beside the full outline (presenter mode on a small screen); per stop.
  bool caption_compact_ = false;
  int caption_compact_stop_ = -1;
  float applied_caption_wanted_ = -1.f;  // the caption height the stop was last laid out for
  float caption_used_wanted_ = 0.f;      // the wanted height the caption's rectangle used this frame
  // The caption text's font scale: below 1 only when the text would not fit even beside the
  // narrow outline in the room the stop's panels leave (presenter mode on a small screen).
  float caption_font_scale_ = 1.f;
  bool caption_relayout_ = false;
  uint64_t applied_tour_ = 0;
  int tour_selected_ = -1;  // -1: the stop's selection is still to be applied
  // The stop whose layout is settling, its frames so far, and the Document height it was laid out for.
  int settle_stop_ = -1, settle_frames_ = 0;
  float applied_doc_wanted_ = -1.f;
  Presenter presenter_;

  // Side by side: panel instances of side B (the registry's per-model panels; null for the
  // others), its view model, the difference view.
  struct SideB {
    std::vector<std::unique_ptr<Panel>> panels;
    template <class P>
    P& panel(PanelId id) { return static_cast<P&>(*panels[static_cast<size_t>(id)]); }
    template <class P>
    const P& panel(PanelId id) const { return static_cast<const P&>(*panels[static_cast<size_t>(id)]); }
    ViewModel vm;
    std::shared_ptr<const StepData> synced;
    uint64_t seen_selection = 0;
  };
  SideB side_b_;
  ViewPtr compare_;
  std::string label_a_ = "A", label_b_ = "B", compare_model_;
  bool same_scale_ = true, show_diff_ = true, open_compare_ = false, compare_requested_ = false;
  float compare_shared_max_ = NAN;
  ScrollLink doc_scroll_;                    // the two Document panels scroll together
  int synced_scale_[2] = {-1, -1};           // writer / attention scale choice last synced between the sides
  ui::HeatmapImage diff_image_;
  ui::ColorbarImage diff_colorbar_;
  uint64_t diff_key_ = 0;
  DiffMap diff_;
  std::shared_ptr<const StepData> diff_a_, diff_b_;
  int diff_head_ = -3, diff_layer_ = -3;
  PanelId diff_panel_ = PanelId::kControls;
  ExportJob export_job_;
  std::vector<std::string> export_paths_;
  bool export_done_ = false;
};

}  // namespace mnemo::app
