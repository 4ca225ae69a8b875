#include "app/gui/shell/shell.h"

#include "app/gui/model/html_export.h"
#include "app/gui/shell/layout.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <cmath>

namespace mnemo::app {

namespace {

void centre_next_window() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.5f, vp->Pos.y + vp->Size.y * 0.5f), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
}

// GLFW key codes of letters are their upper-case ASCII codes (the backend fills io.KeysDown by them).
bool ctrl_key(char upper) { return ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed(upper, false); }

// The shipped assets: the zoo's parent folder (assets/models -> assets); "" before the zoo is known.
std::string shipped_assets_dir(const std::string& zoo_dir) {
  if (zoo_dir.empty()) return "";
  const auto slash = zoo_dir.find_last_of('/');
  return slash == std::string::npos ? "." : zoo_dir.substr(0, slash);
}

// File > Export HTML... (docs/gui.md#html-export): `mnemoscope html` run by this program as a
// child process (app/gui/model/html_export.h), in a window of its own while it runs.
struct HtmlExportDialog {
  bool open = false, mean_only = false;
  std::string out, scratch, status;
  int from = 0, to = 0;
  ChildRun run;
  bool running = false;
};
HtmlExportDialog& html_dialog() {
  static HtmlExportDialog d;
  return d;
}

void open_html_export(const PublishedView& s) {
  HtmlExportDialog& d = html_dialog();
  d.open = true;
  if (d.running) return;
  const std::string doc = s.info && s.info->doc ? s.info->doc->path : "";
  d.out = !s.session_dir.empty() ? s.session_dir + "/probe.html" : !doc.empty() ? doc + ".html" : "mnemoscope.html";
  const auto [a, b] = html_export_range(s);
  d.from = static_cast<int>(a);
  d.to = static_cast<int>(b);
  d.status.clear();
}

void draw_html_export(const PublishedView& s) {
  HtmlExportDialog& d = html_dialog();
  if (d.running && d.run.poll() == ChildRun::State::kExited) {
    d.running = false;
    d.status = d.run.exit_code() == 0 ? "wrote " + d.out + ": open it in any browser, offline"
                                      : "the export failed (exit " + std::to_string(d.run.exit_code()) + "): " + d.run.last_line();
  }
  if (!d.open) return;
  centre_next_window();
  if (!ImGui::Begin("Export HTML", &d.open, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::End();
    return;
  }
  ImGui::TextUnformatted("One self-contained page of the document, its tints and the memory views of every segment\n"
                         "from..to, that any browser opens offline (mnemoscope html; docs/gui.md#html-export).");
  if (!s.session_dir.empty())
    ImGui::TextDisabled("A replay: the page steps the session's newest checkpoint over the probe document.");
  ImGui::SetNextItemWidth(520.f);
  ImGui::InputText("file", &d.out);
  ImGui::SetNextItemWidth(120.f);
  ImGui::InputInt("from segment", &d.from);
  ImGui::SetNextItemWidth(120.f);
  ImGui::InputInt("to segment", &d.to);
  ImGui::Checkbox("mean over heads only (a smaller page)", &d.mean_only);
  ImGui::BeginDisabled(d.running);
  if (ImGui::Button("Export", ImVec2(120, 0))) {
    std::string why;
    if (d.scratch.empty()) {
      char tmpl[] = "/tmp/mnemoscope-html-XXXXXX";
      if (const char* p = ::mkdtemp(tmpl)) d.scratch = p;
    }
    const auto args = html_export_args(s, d.from, d.to, d.mean_only, d.out, d.scratch, &why);
    if (args.empty()) d.status = "cannot export: " + why;
    else if (!d.run.start("/proc/self/exe", args, d.scratch + "/html.log", &why)) d.status = "cannot export: " + why;
    else {
      d.running = true;
      d.status = "exporting segments " + std::to_string(d.from) + ".." + std::to_string(d.to) + "...";
    }
  }
  ImGui::EndDisabled();
  if (d.running) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", d.run.last_line().c_str());
  }
  if (!d.status.empty()) ImGui::TextWrapped("%s", d.status.c_str());
  ImGui::End();
}

}  // namespace

Shell::Shell(ui::TextureApi* textures, ui::UiFonts fonts, Settings* settings, std::ostream* log)
    : textures_(textures), fonts_(fonts), settings_(settings), log_(log) {
  const auto n = static_cast<size_t>(panel_count());
  panels_.resize(n);
  side_b_.panels.resize(n);
  windows_.resize(n);
  for (const PanelDef& d : panel_registry()) {
    const auto i = static_cast<size_t>(panel_id(d));
    panels_[i] = d.make();
    if (d.per_model) side_b_.panels[i] = d.make();
    windows_[i].open = d.open_by_default;
  }
}

void Shell::frame(const ViewPtr& view, Controller& control, const ViewPtr& compare) {
  static const PublishedView kEmpty;
  const PublishedView& s = view ? *view : kEmpty;
  compare_ = compare;
  if (compare_ && compare_->step != side_b_.synced) {
    side_b_.synced = compare_->step;
    const PublishedView& b = *compare_;
    const int entries = b.step && b.step->memformer.slots == 0 && b.provenance ? b.provenance->slots : 0;
    if (b.step)
      side_b_.vm.set_step(b.step->memformer.slots > 0 ? b.step->memformer.slots : entries, b.step->memformer.self_mass);
    else side_b_.vm.set_step(0, {});
  }
  if (s.step != synced_step_ || s.slot_effects != synced_fx_) {
    synced_step_ = s.step;
    synced_fx_ = s.slot_effects;
    // Memory entries without a writer (RMT memory tokens, MTN kept entries) are selectable
    // too: the Document panel tints by the selected entry's provenance. Transformer-XL's
    // cache blocks once the slot effects name them (their only view: the slot-effect tint).
    int entries = s.step && s.step->memformer.slots == 0 && s.provenance ? s.provenance->slots : 0;
    if (s.step && s.step->memformer.slots == 0 && s.slot_effects && s.slot_effects->segment == s.step->segment)
      entries = std::max(entries, static_cast<int>(s.slot_effects->entries()));
    if (s.step)
      vm_.set_step(s.step->memformer.slots > 0 ? s.step->memformer.slots : entries, s.step->memformer.self_mass);
    else vm_.set_step(0, {});
  }
  if (s.info && s.info->id != synced_info_) {
    synced_info_ = s.info->id;
    if (settings_ && s.info->doc && !s.info->doc->path.empty() && s.info->doc->path != "synthetic")
      settings_->add_recent(absolute_path(s.info->doc->path));
    export_dir_ = dashboard().model().is_open() ? dashboard().model().dir() + "/export" : default_export_dir(s, shipped_assets_dir(zoo_dir_));
  }
  if (!dropped_.empty()) {
    open_path(dropped_, control);
    dropped_.clear();
  }

  apply_tour(s, control);
  draw_menu(s, control);
  draw_panels(s, control);
  handle_keys(s, control);

  // Play: one step per 1/speed seconds, never queueing ahead of the worker.
  if (transport_.playing) {
    const int64_t n = s.info ? s.info->num_segments : 0;
    const double now = ImGui::GetTime();
    if (n == 0 || (s.position >= n - 1 && !control.busy())) {
      transport_.playing = false;
    } else if (!control.busy() && now >= next_play_) {
      control.step(+1);
      next_play_ = now + 1.0 / std::max(0.1f, transport_.speed);
    }
  }
  draw_modals(view, control);
  draw_html_export(s);
}

void Shell::open_dashboard(const std::string& dir, ReplayController* replay) {
  dashboard().model().open(dir, replay);
  set_panel_open(PanelId::kDashboard, true);
  export_dir_ = dir + "/export";
  reset_layout_ = true;
}

ExportRequest Shell::export_request(PanelId panel, const ViewPtr& view, const std::string& dir) const {
  ExportRequest req;
  req.panel = panel;
  req.view = view;
  req.head = vm_.head();
  req.thresholds = vm_.thresholds();
  req.selected_slot = vm_.selected_slot();
  req.attn_layer = attention().layer_index();
  req.attn_head = attention().head();
  // The colour ranges the maps are drawn on (the fixed 0..1 by default), printed in the figures.
  const StepData* st = view ? view->step.get() : nullptr;
  this->panel<WriterAttentionPanel>(PanelId::kWriterAttention).export_range(st, &req.writer_vmin, &req.writer_vmax);
  req.attn_vmax = attention().export_vmax(st);
  req.hash_path = hash_buckets().path();
  req.hash_table = hash_buckets().table();
  // A followed training session: its curves too (the dashboard's charts).
  if (dashboard().model().run_log()) {
    req.run_log = std::make_shared<const RunLog>(*dashboard().model().run_log());
    if (dashboard().model().compare_log()) req.compare_log = std::make_shared<const RunLog>(*dashboard().model().compare_log());
  }
  req.compare = compare_;
  if (compare_ && !side_b_.panels.empty()) {
    // B's own selections (its panels' head, layer, scales), for its seg-NNNN-B-* figures.
    PanelSelections& b = req.compare_sel;
    const StepData* sb = compare_->step.get();
    b.head = side_b_.vm.head();
    b.thresholds = side_b_.vm.thresholds();
    b.selected_slot = side_b_.vm.selected_slot();
    const auto& attn_b = side_b_.panel<AttentionPanel>(PanelId::kAttention);
    b.attn_layer = attn_b.layer_index();
    b.attn_head = attn_b.head();
    side_b_.panel<WriterAttentionPanel>(PanelId::kWriterAttention).export_range(sb, &b.writer_vmin, &b.writer_vmax);
    b.attn_vmax = attn_b.export_vmax(sb);
    const auto& hash_b = side_b_.panel<HashBucketsPanel>(PanelId::kHashBuckets);
    b.hash_path = hash_b.path();
    b.hash_table = hash_b.table();
    // The slide: each side's map on the range its panel draws (writer attention, else attention).
    auto range = [](const PublishedView& v, const PanelSelections& sel) {
      ColourRange r;
      if (v.step && v.step->memformer.has_writer()) r = {sel.writer_vmin, sel.writer_vmax};
      else if (v.step && !v.step->attention.empty()) r = {0.f, sel.attn_vmax};
      return r;
    };
    if (view) req.range_a = range(*view, req);
    req.range_b = range(*compare_, b);
  }
  req.label_a = label_a_;
  req.label_b = label_b_;
  req.same_scale = same_scale_;
  req.dir = dir;
  return req;
}

void Shell::open_path(const std::string& path, Controller& control) {
  if (path.empty()) {
    errors_.push_back("Open: no path given. Type the path of a document (any file) or pick a recent one.");
    return;
  }
  transport_.playing = false;
  control.open_document(absolute_path(path));
}

void Shell::draw_menu(const PublishedView& s, Controller& control) {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) requests_.open_dialog = true;
    if (ImGui::MenuItem("Open model...", "Ctrl+M")) open_model_ = true;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The trained models of the zoo (assets/models), or any weights file");
    const bool have_recent = settings_ && !settings_->recent().empty();
    if (ImGui::BeginMenu("Open recent", have_recent)) {
      for (const auto& r : settings_->recent())
        if (ImGui::MenuItem(r.c_str())) open_path(r, control);
      ImGui::EndMenu();
    }
    ImGui::Separator();
    const bool can_export = s.step != nullptr || dashboard().model().is_open();
    if (ImGui::MenuItem("Export focused panel...", "Ctrl+E", false, can_export)) requests_.export_panel = static_cast<int>(focused_);
    if (ImGui::MenuItem("Export all panels...", nullptr, false, can_export))
      requests_.export_panel = static_cast<int>(PanelId::kControls);
    if (ImGui::MenuItem("Export HTML...", nullptr, false, s.info != nullptr)) open_html_export(s);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("One self-contained page of the document and its memory views that any browser opens offline");
    ImGui::Separator();
    if (ImGui::MenuItem("Compare with model...", nullptr, false, s.info != nullptr && s.session_dir.empty())) open_compare_ = true;
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("Step a second model through the same document in lockstep, each panel twice, side by side");
    if (compare_ && ImGui::MenuItem("Stop comparing")) {
      compare_model_.clear();
      compare_requested_ = true;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) quit_ = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (const PanelDef& d : panel_registry()) {
      const PanelId id = panel_id(d);
      std::string why;
      const bool applies = applies_here(id, s);
      if (!applies) panel_applies(id, s, &why);
      ImGui::MenuItem(panel_title(id), nullptr, &windows_[static_cast<size_t>(id)].open, applies);
      if (!applies && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why.c_str());
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Reset layout")) reset_layout_ = true;
    if (compare_) {
      ImGui::Separator();
      ImGui::MenuItem("Same colour scale (side by side)", nullptr, &same_scale_);
      ImGui::MenuItem("Difference A - B (side by side)", nullptr, &show_diff_);
    }
    ImGui::EndMenu();
  }
  draw_tour_menu();
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("Right / Left     next / previous segment");
    ImGui::TextUnformatted("Home / End       first / last segment");
    ImGui::TextUnformatted("Space            play / pause");
    ImGui::TextUnformatted("Ctrl+O           open a document (or drop a file on the window)");
    ImGui::TextUnformatted("Ctrl+M           open a trained model (the zoo, or any weights file)");
    ImGui::TextUnformatted("Ctrl+E           export the focused panel (PNG, SVG, CSV)");
    ImGui::TextUnformatted("Click a slot in any panel to select it in all of them.");
    ImGui::Separator();
    ImGui::TextDisabled("Mnemoscope %s, Dear ImGui %s", MNEMO_VERSION, IMGUI_VERSION);
    ImGui::EndMenu();
  }
  // Right side: where we are.
  std::string status;
  if (s.info && s.info->doc) {
    status = status_text(s);
    if (compare_) status += "  |  side by side: " + label_a_ + " vs " + label_b_;
  }
  if (control.busy()) status += "  |  computing...";
  if (!status.empty()) {
    const float w = ImGui::CalcTextSize(status.c_str()).x + 12.f;
    const float x = ImGui::GetWindowWidth() - w;
    if (x > ImGui::GetCursorPosX()) {
      ImGui::SetCursorPosX(x);
      ImGui::TextDisabled("%s", status.c_str());
    }
  }
  ImGui::EndMainMenuBar();
}

void Shell::draw_panels(const PublishedView& s, Controller& control) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float menu_h = ImGui::GetFrameHeight();
  const ImVec2 work_pos(vp->Pos.x, vp->Pos.y + menu_h);
  const ImVec2 work_size(vp->Size.x, std::max(1.f, vp->Size.y - menu_h));
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const bool display_changed =
      last_display_.x > 0.f && (std::fabs(display.x - last_display_.x) > 0.5f || std::fabs(display.y - last_display_.y) > 0.5f);

  // A model with other panels (another kind, hashed or not) gets their default places.
  // Side by side: the panels of both models' families (a Memformer beside an RMT: both memories).
  LayoutHint hint = layout_hint(s, compare_ && compare_->info ? compare_.get() : nullptr);
  if (!compare_) document_panel().link_scroll(nullptr, 0);
  hint.dashboard = dashboard().model().is_open() && windows_[static_cast<size_t>(PanelId::kDashboard)].open;
  // (Side by side, also when the first views arrive: windows drawn before either model had
  // loaded were placed for one family.)
  if ((have_hint_ || compare_) && hint != hint_) reset_layout_ = true;
  hint_ = hint;
  have_hint_ = s.info != nullptr;

  PanelContext ctx{s, vm_, *textures_, control, transport_, requests_, fonts_.mono, false};
  ctx.small_mono = fonts_.small_mono;
  ctx.seq_cmap = presenter_.high_contrast ? viz::Colormap::Gray : viz::Colormap::Viridis;
  const TourStop* stop = tour_.current();
  // The Document strip of a stop follows its text's wanted height while the stop settles (its
  // selection adds a line above the text a frame or two after the layout was forced); later a
  // user's own resizing is left alone.
  if (!stop || tour_.index() != settle_stop_) {
    settle_stop_ = stop ? tour_.index() : -1;
    settle_frames_ = 0;
    applied_doc_wanted_ = -1.f;
    applied_caption_wanted_ = -1.f;
  }
  const float doc_wanted = document_panel().wanted_height();
  // ... and so does the caption's height (its outline may shrink to fit the text).
  const bool relayout = stop && !tour_layout_ && settle_frames_ < 60 &&
                        ((applied_doc_wanted_ >= 0.f && std::fabs(doc_wanted - applied_doc_wanted_) > 1.f) ||
                         (applied_caption_wanted_ >= 0.f && std::fabs(caption_wanted_ - applied_caption_wanted_) > 1.f));
  caption_relayout_ = relayout;
  if (stop) {
    ctx.highlight_token = stop->select.token;
    draw_caption(control);
  }
  for (const PanelDef& d : panel_registry()) {
    const PanelId id = panel_id(d);
    const int i = static_cast<int>(id);
    if (!windows_[i].open || !applies_here(id, s)) continue;
    PanelRect def = default_panel_rect(id, work_pos, work_size, hint);
    ImGuiCond cond = reset_layout_ ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    if (stop) {
      // A tour stop: its panels in the order listed, above the caption.
      int k = 0, n = 0;
      TourLayout how;
      how.caption_wanted = caption_used_wanted_;  // as the caption's own rectangle this frame
      for (const auto& name : stop->panels) {
        const bool shown = panel_of_tour_name(name) >= 0 && panel_applies(static_cast<PanelId>(panel_of_tour_name(name)), s);
        if (panel_of_tour_name(name) == i) k = n;
        if (shown && panel_of_tour_name(name) == static_cast<int>(PanelId::kDocument)) how.document_index = n;
        n += shown ? 1 : 0;
      }
      // The Document panel as tall as its text wants (last frame's measure): a short episode
      // is a strip across the top, not one line in a tall empty panel.
      how.document_wanted = doc_wanted;
      def = tour_panel_rect(k, n, work_pos, work_size, how);
      if (tour_layout_ || relayout) cond = ImGuiCond_Always;
    }
    if (display_changed && windows_[i].have_rect && !reset_layout_ && !stop) {
      const PanelRect r = rescale_rect(windows_[i].last_rect, last_display_, display, work_pos);
      ImGui::SetNextWindowPos(r.pos, ImGuiCond_Always);
      ImGui::SetNextWindowSize(r.size, ImGuiCond_Always);
    } else {
      ImGui::SetNextWindowPos(def.pos, cond);
      ImGui::SetNextWindowSize(def.size, cond);
    }
    ImGui::SetNextWindowSizeConstraints(ImVec2(160.f, 90.f), ImVec2(FLT_MAX, FLT_MAX));
    const bool visible = ImGui::Begin(d.title, &windows_[i].open, d.window_flags);
    // Keep a window reachable when the display shrank since imgui.ini was written.
    ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    if (pos.x > display.x - 60.f || pos.y > display.y - 40.f || pos.x + size.x < 60.f || pos.y < work_pos.y - 1.f) {
      pos.x = std::min(std::max(0.f, pos.x), std::max(0.f, display.x - std::min(size.x, display.x)));
      pos.y = std::min(std::max(work_pos.y, pos.y), std::max(work_pos.y, display.y - std::min(size.y, work_size.y)));
      ImGui::SetWindowPos(pos);
    }
    windows_[i].last_rect = PanelRect{ImGui::GetWindowPos(), ImGui::GetWindowSize()};
    windows_[i].have_rect = true;
    windows_[i].drawn_frame = ImGui::GetFrameCount();
    if (ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows)) focused_ = id;
    if (visible && compare_ && d.per_model) draw_compare(id, ctx, control);
    else if (visible) panels_[static_cast<size_t>(i)]->draw(ctx);
    windows_[i].scroll_max_y = ImGui::GetScrollMaxY();
    ImGui::End();
  }
  last_display_ = display;
  reset_layout_ = false;
  // A stop keeps its layout forced until it is on screen (its panels may apply only once
  // the stop's model has loaded).
  if (stop) {
    if (tour_layout_ || relayout) {
      applied_doc_wanted_ = doc_wanted;
      applied_caption_wanted_ = caption_used_wanted_;
    }
    ++settle_frames_;
  }
  if (stop && tour_selected_ == tour_.index()) tour_layout_ = false;
}

void Shell::handle_keys(const PublishedView& s, Controller& control) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) return;
  const int64_t n = s.info ? s.info->num_segments : 0;
  if (ctrl_key('O')) requests_.open_dialog = true;
  if (ctrl_key('M')) open_model_ = true;
  if (ctrl_key('E') && (s.step || (dashboard().model().is_open() && focused_ == PanelId::kDashboard)))
    requests_.export_panel = static_cast<int>(applies_here(focused_, s) ? focused_ : PanelId::kControls);
  if (ctrl_key('Q')) quit_ = true;
  if (io.KeyCtrl) return;
  if (tour_.active()) {
    // A tour: the arrows and a presenter's clicker (PageUp / PageDown) move between stops.
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown)))
      tour_.next();
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp)))
      tour_.previous();
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) tour_.go(0);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) tour_.go(tour_.count() - 1);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) stop_tour();
    return;
  }
  if (n == 0) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) control.step(+1);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) control.step(-1);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) control.jump(0);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) control.jump(n - 1);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) transport_.playing = !transport_.playing;
}

namespace {
// A dialog's Cancel button, or Escape.
bool cancel_pressed() {
  return ImGui::Button("Cancel", ImVec2(120, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
}
}  // namespace

void Shell::close_modal() {
  modal_ = Modal::kNone;
  ImGui::CloseCurrentPopup();
}

Shell::PathAnswer Shell::ask_path(const PathDialog& d, std::string& field, const std::vector<PathChoice>& list, float wrap) {
  centre_next_window();
  ImGui::SetNextWindowSize(ImVec2(wrap + 40.f, 0.f), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal(d.title, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return PathAnswer::kCancelled;
  ImGui::TextUnformatted(d.prompt);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::SetNextItemWidth(wrap);
  bool go = ImGui::InputText("##path", &field, ImGuiInputTextFlags_EnterReturnsTrue);
  if (d.list_caption && !list.empty()) {
    ImGui::TextDisabled("%s", d.list_caption);
    if (ImGui::BeginChild("##list", ImVec2(wrap, ImGui::GetTextLineHeightWithSpacing() * 6.f), true))
      for (const auto& c : list)
        if (ImGui::Selectable(c.shown.c_str(), c.path == field, ImGuiSelectableFlags_AllowDoubleClick)) {
          field = c.path;
          if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) go = true;
        }
    ImGui::EndChild();
  }
  if (*d.note) ImGui::TextDisabled("%s", d.note);
  PathAnswer answer = PathAnswer::kAsking;
  if (ImGui::Button(d.confirm, ImVec2(120, 0)) || go) answer = PathAnswer::kConfirmed;
  ImGui::SameLine();
  if (answer == PathAnswer::kAsking && cancel_pressed()) answer = PathAnswer::kCancelled;
  if (answer != PathAnswer::kAsking) close_modal();
  ImGui::EndPopup();
  return answer;
}

void Shell::draw_modals(const ViewPtr& view, Controller& control) {
  for (auto& e : requests_.errors) errors_.push_back(std::move(e));
  requests_.errors.clear();
  if (modal_ == Modal::kNone) {
    if (!errors_.empty()) {
      modal_ = Modal::kError;
      ImGui::OpenPopup("Problem");
    } else if (requests_.open_dialog) {
      modal_ = Modal::kOpen;
      open_path_.clear();
      ImGui::OpenPopup("Open document");
    } else if (open_model_) {
      modal_ = Modal::kModel;
      picker_.reset();
      ImGui::OpenPopup("Open model");
    } else if (open_tour_) {
      modal_ = Modal::kTour;
      ImGui::OpenPopup("Open tour");
    } else if (open_compare_) {
      modal_ = Modal::kCompare;
      ImGui::OpenPopup("Compare with model");
    } else if (requests_.export_panel >= 0) {
      modal_ = Modal::kExport;
      export_panel_ = static_cast<PanelId>(requests_.export_panel);
      export_paths_.clear();
      export_done_ = false;
      ImGui::OpenPopup("Export");
    }
  }
  requests_.open_dialog = false;
  open_model_ = false;
  open_tour_ = false;
  open_compare_ = false;
  requests_.export_panel = -1;
  const float wrap = ImGui::GetFontSize() * 36.f;

  if (modal_ == Modal::kTour || modal_ == Modal::kCompare || modal_ == Modal::kOpen) {
    const bool tour = modal_ == Modal::kTour, open = modal_ == Modal::kOpen;
    std::vector<PathChoice> list;
    if (open && settings_)
      for (const auto& r : settings_->recent()) list.push_back({r, r});
    if (modal_ == Modal::kCompare)
      for (const auto& z : picker_.zoo()) list.push_back({z.name, z.path});
    const PathDialog dialog =
        tour   ? PathDialog{"Open tour", "Path of a tour file (docs/formats.md#tours):", nullptr, "Play", ""}
        : open ? PathDialog{"Open document", "Path of a document (any file; bytes that are not UTF-8 are shown escaped):",
                            "Recent (double-click to open):", "Open", "You can also drop a file on the window."}
               : PathDialog{"Compare with model",
                            "A zoo model's name or a weights file (checkpoint, zoo model, export-weights):",
                            "The zoo (double-click to compare):", "Compare", ""};
    std::string& field = tour ? tour_path_ : open ? open_path_ : compare_model_;
    const PathAnswer answer = ask_path(dialog, field, list, wrap);
    if (answer == PathAnswer::kConfirmed) {
      if (tour) {
        try {
          start_tour(load_tour(tour_path_, zoo_dir_));
        } catch (const std::exception& e) {
          errors_.push_back(e.what());
        }
      } else if (open) {
        open_path(open_path_, control);
      } else {
        compare_requested_ = !compare_model_.empty();
        if (compare_model_.empty()) errors_.push_back("Compare: no model given. Pick a zoo model or type a weights file.");
      }
    }
    if (answer != PathAnswer::kAsking) modal_ = Modal::kNone;
  } else if (modal_ == Modal::kError) {
    centre_next_window();
    if (ImGui::BeginPopupModal("Problem", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
      ImGui::PushTextWrapPos(wrap);
      ImGui::TextUnformatted(errors_.empty() ? "" : errors_.front().c_str());
      ImGui::PopTextWrapPos();
      ImGui::TextDisabled("The app keeps its previous state.");
      if (ImGui::Button("OK", ImVec2(120, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter)) ||
          ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
        if (!errors_.empty()) errors_.pop_front();
        close_modal();
      }
      ImGui::EndPopup();
    } else {
      modal_ = Modal::kNone;
    }
  } else if (modal_ == Modal::kModel) {
    centre_next_window();
    if (ImGui::BeginPopupModal("Open model", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
      const ModelConfig* current = view && view->info ? &view->info->cfg : nullptr;
      const std::string open_doc = view && view->info && view->info->doc && view->session_dir.empty()
                                       ? view->info->doc->path
                                       : std::string();
      if (picker_.draw(control, wrap * 1.6f, current, open_doc)) {
        transport_.playing = false;
        close_modal();
      }
      ImGui::EndPopup();
    } else {
      modal_ = Modal::kNone;
    }
  } else if (modal_ == Modal::kExport) {
    std::string err;
    std::vector<std::string> paths;
    bool close = false;
    if (export_job_.take_result(&paths, &err)) {
      if (!err.empty()) {
        errors_.push_back("Export failed: " + err);
        close = true;
      } else {
        export_done_ = true;
        export_paths_ = std::move(paths);
        if (log_) {
          *log_ << "exported " << export_paths_.size() << " files:\n";
          for (const auto& p : export_paths_) *log_ << "  " << p << "\n";
          log_->flush();
        }
      }
    }
    centre_next_window();
    if (ImGui::BeginPopupModal("Export", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
      const bool all = export_panel_ == PanelId::kControls;
      ImGui::Text("Export %s as PNG (2x), SVG and CSV", all ? "every panel" : panel_title(export_panel_));
      ImGui::BeginDisabled(export_job_.running() || export_done_);
      ImGui::SetNextItemWidth(wrap);
      ImGui::InputText("folder", &export_dir_);
      ImGui::EndDisabled();
      if (export_job_.running()) {
        ImGui::TextUnformatted("Writing files...");
      } else if (export_done_) {
        ImGui::Text("Wrote %zu files:", export_paths_.size());
        if (ImGui::BeginChild("##paths", ImVec2(wrap, ImGui::GetTextLineHeightWithSpacing() * std::min<float>(10.f, 1.f + export_paths_.size())), true))
          for (const auto& p : export_paths_) ImGui::TextUnformatted(p.c_str());
        ImGui::EndChild();
        if (ImGui::Button("Close", ImVec2(120, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) close = true;
      } else {
        if (ImGui::Button("Export", ImVec2(120, 0))) {
          ExportRequest req = export_request(export_panel_, view, export_dir_);
          export_job_.start(std::move(req));
        }
        ImGui::SameLine();
        if (cancel_pressed()) close = true;
      }
      if (close) close_modal();
      ImGui::EndPopup();
    } else if (!export_job_.running()) {
      modal_ = Modal::kNone;
    }
  }
}

}  // namespace mnemo::app
