// The desktop app's frame: main menu, the panel windows (default layout, rescaled when the
// display changes), keyboard shortcuts, play timing, and the modal dialogs (problems, open
// document, export). Platform-free: the GLFW loop (app/gui/app.cpp) and the null-backend
// test both drive it. Contract: call frame() once per ImGui frame, between NewFrame and
// Render, from the thread that owns the ImGui context.
#pragma once
#include "app/gui/model/controller.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/layout.h"
#include "app/gui/shell/model_picker.h"
#include "app/gui/model/session.h"
#include "app/gui/platform/settings.h"
#include "app/gui/panels/dashboard.h"
#include "app/gui/panels/panels.h"
#include "app/gui/model/view_model.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/panels/widgets/texture.h"

#include <deque>
#include <ostream>
#include <string>

namespace mnemo::app {

class Shell {
 public:
  // settings may be null (nothing remembered); log receives export reports (may be null).
  Shell(ui::TextureApi* textures, ui::UiFonts fonts, Settings* settings, std::ostream* log);

  void frame(const SessionPtr& session, Controller& control);

  // A file dropped on the window: opened like File > Open.
  void drop_file(const std::string& path) { dropped_ = path; }
  // Problems to show as popups (worker errors, bad command-line input at run time).
  void push_error(const std::string& message) { errors_.push_back(message); }
  bool has_popup() const { return modal_ != Modal::kNone || !errors_.empty(); }
  const std::deque<std::string>& pending_errors() const { return errors_; }

  bool quit_requested() const { return quit_; }
  ViewModel& view_model() { return vm_; }
  Transport& transport() { return transport_; }
  void set_panel_open(PanelId id, bool open) { open_[static_cast<int>(id)] = open; }
  GalleryPanel& gallery() { return gallery_; }
  AttentionPanel& attention() { return attention_; }
  HashBucketsPanel& hash_buckets() { return hash_; }
  DashboardPanel& dashboard() { return dashboard_; }
  // Follows a training session in the dashboard (opened and laid out across the bottom);
  // replay (may be null) shows its recordings in the map panels.
  void open_dashboard(const std::string& dir, ReplayController* replay);
  // Exports the panel now in the background (as Ctrl+E followed by Export).
  void request_export(PanelId id) { requests_.export_panel = static_cast<int>(id); }
  // File > Open model...: the zoo it lists (app/gui/model/zoo_catalog.h), and opening it.
  ModelPicker& model_picker() { return picker_; }
  void request_model_picker() { open_model_ = true; }

 private:
  enum class Modal { kNone, kError, kOpen, kExport, kModel };
  void draw_menu(const SessionView& s, Controller& control);
  void draw_panels(const SessionView& s, Controller& control);
  void handle_keys(const SessionView& s, Controller& control);
  void draw_modals(const SessionPtr& session, Controller& control);
  void open_path(const std::string& path, Controller& control);

  ui::TextureApi* textures_;
  ui::UiFonts fonts_;
  Settings* settings_;
  std::ostream* log_;
  ViewModel vm_;
  Transport transport_;
  ShellRequests requests_;
  std::shared_ptr<const StepData> synced_step_;
  uint64_t synced_info_ = 0;

  ControlsPanel controls_;
  DocumentPanel document_;
  WriterAttentionPanel writer_;
  SlotTypesPanel types_;
  ForgettingPanel forgetting_;
  MemoryPanel memory_;
  TimelinePanel timeline_;
  GalleryPanel gallery_;
  AttentionPanel attention_;
  HashBucketsPanel hash_;
  MtnMemoryPanel mtn_;
  DashboardPanel dashboard_;

  bool open_[kPanelCount] = {true, true, true, true, true, true, true, false, true, true, true, false};
  LayoutHint hint_;
  bool have_hint_ = false;
  PanelRect last_rect_[kPanelCount] = {};
  bool have_rect_[kPanelCount] = {};
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
  ExportJob export_job_;
  std::vector<std::string> export_paths_;
  bool export_done_ = false;
};

}  // namespace mnemo::app
