// Guided tours in the shell (docs/gui.md#tours): the Tour menu, applying a stop (model,
// document, segment, panels, selection), the caption panel with its outline of stops, and
// presenter mode's settings. The tour file itself is read by app/gui/model/tour.h.
#include "app/gui/shell/shell.h"

#include "app/gui/model/tour_check.h"
#include "app/gui/shell/layout.h"

#include <algorithm>
#include <cfloat>

namespace mnemo::app {

int panel_of_tour_name(const std::string& name) {
  if (name == "controls") return static_cast<int>(PanelId::kControls);
  for (const PanelDef& d : panel_registry())
    if (d.per_model && name == d.file_name) return static_cast<int>(panel_id(d));
  return -1;
}

void Shell::set_tours(std::vector<std::string> paths, std::string zoo_dir) {
  tour_paths_ = std::move(paths);
  zoo_dir_ = std::move(zoo_dir);
}

void Shell::start_tour(Tour t) {
  if (!tour_.active())
    for (auto& w : windows_) w.saved_open = w.open;
  transport_.playing = false;
  tour_.start(std::move(t));
  applied_tour_ = 0;
}

void Shell::stop_tour() {
  if (!tour_.active()) return;
  tour_.stop();
  for (auto& w : windows_) w.open = w.saved_open;
  reset_layout_ = true;
  tour_selected_ = -1;
}

namespace {
bool stop_on_screen(const TourStop& st, const PublishedView& s) {
  return stop_session_open(st, s) && s.step && s.step->segment == st.segment;
}
}  // namespace

bool Shell::tour_stop_shown(const PublishedView& s) const {
  const TourStop* st = tour_.current();
  return st && tour_selected_ == tour_.index() && stop_on_screen(*st, s);
}

void Shell::apply_tour(const PublishedView& s, Controller& control) {
  const TourStop* st = tour_.current();
  if (!st) return;
  if (tour_.version() != applied_tour_) {
    applied_tour_ = tour_.version();
    tour_selected_ = -1;
    if (!stop_session_open(*st, s)) control.open_session(st->document, st->cfg, 0, st->checkpoint, st->segment_len);
    control.jump(st->segment);
    for (auto& w : windows_) w.open = false;
    for (const auto& name : st->panels) {
      const int i = panel_of_tour_name(name);
      if (i >= 0) windows_[static_cast<size_t>(i)].open = true;
    }
    document_panel().set_tint(st->tint == "loss"         ? DocumentPanel::kTintLoss
                       : st->tint == "provenance" ? DocumentPanel::kTintProvenance
                       : st->tint == "benefit"    ? DocumentPanel::kTintBenefit
                       : st->tint == "slot_effect" ? DocumentPanel::kTintSlotEffect
                                                  : DocumentPanel::kTintVisited);
    tour_layout_ = true;
  }
  // The selection once the stop's step is on screen (the slot count is known then).
  if (tour_selected_ != tour_.index() && stop_on_screen(*st, s)) {
    vm_.select_slot(st->select.slot);
    vm_.set_head(st->select.head, s.step->heads);
    attention().select(st->select.layer, st->select.head);
    // The stop's token is also the Document panel's selection: what it read from the memory
    // and what that memory held (outlined), when the stop's segment holds it.
    document_panel().select_token(st->select.token);
    // The slot-effect tint: what each memory entry did at this step, computed on the model's
    // thread (the Slot effects panel and the tint show it once done).
    if (st->tint == "slot_effect" && !(s.slot_effects && s.slot_effects->segment == st->segment))
      control.compute_slot_effects();
    tour_selected_ = tour_.index();
  }
}

void Shell::draw_tour_menu() {
  if (!ImGui::BeginMenu("Tour")) return;
  for (const auto& p : tour_paths_) {
    const auto slash = p.find_last_of('/');
    const std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
    if (ImGui::MenuItem(name.c_str())) {
      try {
        start_tour(load_tour(p, zoo_dir_));
      } catch (const std::exception& e) {
        errors_.push_back(e.what());
      }
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", p.c_str());
  }
  if (ImGui::MenuItem("Open tour file...")) open_tour_ = true;
  ImGui::Separator();
  const bool on = tour_.active();
  if (ImGui::MenuItem("Next stop", "Right / PageDown", false, on)) tour_.next();
  if (ImGui::MenuItem("Previous stop", "Left / PageUp", false, on)) tour_.previous();
  if (ImGui::MenuItem("End the tour", "Esc", false, on)) stop_tour();
  ImGui::Separator();
  ImGui::TextDisabled("Presenter mode");
  ImGui::MenuItem("Full screen", nullptr, &presenter_.fullscreen);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.f);
  float scale = presenter_.ui_scale;
  if (ImGui::SliderFloat("UI scale", &scale, 1.f, 2.5f, "%.2fx")) presenter_.ui_scale = std::max(1.f, std::min(2.5f, scale));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Fonts and line widths, redrawn crisp at the new size (Ctrl+click to type)");
  ImGui::MenuItem("High-contrast colour map", nullptr, &presenter_.high_contrast);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Heatmaps in black to white instead of viridis (projectors wash out colour)");
  ImGui::EndMenu();
}

void Shell::draw_caption(Controller&) {
  const TourStop* st = tour_.current();
  if (!st) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float menu_h = ImGui::GetFrameHeight();
  // As tall as the caption's text wanted last frame (at this width and UI scale), within limits.
  const PanelRect r = tour_caption_rect(ImVec2(vp->Pos.x, vp->Pos.y + menu_h), ImVec2(vp->Size.x, vp->Size.y - menu_h),
                                        caption_wanted_);
  ImGui::SetNextWindowPos(r.pos, tour_layout_ ? ImGuiCond_Always : ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(r.size, tour_layout_ ? ImGuiCond_Always : ImGuiCond_FirstUseEver);
  bool open = true;
  const std::string title = "Tour: " + tour_.tour().title + "###Tour";
  if (ImGui::Begin(title.c_str(), &open)) {
    // Left: the caption. Right: the outline of every stop (click to go there).
    const float outline_w = std::min(ImGui::GetContentRegionAvail().x * 0.3f, ImGui::GetFontSize() * 22.f);
    float content_h = 0.f;  // what the caption and the outline need (caption_wanted_ for the next frame)
    if (ImGui::BeginChild("##caption", ImVec2(ImGui::GetContentRegionAvail().x - outline_w - 8.f, 0), false)) {
      ImGui::TextDisabled("Stop %d of %d  |  %s, segment %lld  |  Right / PageDown: next, Left / PageUp: previous, Esc: end",
                          tour_.index() + 1, tour_.count(), st->model.c_str(), static_cast<long long>(st->segment));
      ImGui::Separator();
      // Word by word, so bold and code spans wrap with the text around them.
      const float right = ImGui::GetContentRegionMax().x;
      for (const auto& b : parse_caption(st->caption)) {
        if (b.kind == CaptionBlock::kBullet) {
          ImGui::Bullet();
          ImGui::SameLine(0.f, 4.f);
        }
        const float left = ImGui::GetCursorPosX();
        bool line_start = true;
        for (const auto& sp : b.spans) {
          ImVec4 col = ImGui::GetStyleColorVec4(ImGuiCol_Text);
          if (sp.code) col = ImVec4(1.f, 0.73f, 0.03f, 1.f);
          if (sp.bold || b.kind == CaptionBlock::kHeading) col = ImVec4(0.55f, 0.8f, 1.f, 1.f);
          size_t i = 0;
          while (i < sp.text.size()) {
            // The next word with the spaces before it.
            size_t j = i;
            while (j < sp.text.size() && sp.text[j] == ' ') ++j;
            while (j < sp.text.size() && sp.text[j] != ' ') ++j;
            std::string word = sp.text.substr(i, j - i);
            i = j;
            if (!line_start) {
              ImGui::SameLine(0.f, 0.f);
              if (ImGui::GetCursorPosX() + ImGui::CalcTextSize(word.c_str()).x > right) {
                ImGui::NewLine();
                ImGui::SetCursorPosX(left);
                const size_t k = word.find_first_not_of(' ');
                word = k == std::string::npos ? std::string() : word.substr(k);
              }
            } else {
              const size_t k = word.find_first_not_of(' ');
              word = k == std::string::npos ? std::string() : word.substr(k);
              ImGui::SetCursorPosX(left);
            }
            ImGui::TextColored(col, "%s", word.c_str());
            line_start = false;
          }
        }
        if (b.kind != CaptionBlock::kBullet) ImGui::Spacing();
      }
      content_h = ImGui::GetCursorPosY();  // content space: the whole text, scrolled or not
    }
    ImGui::EndChild();
    ImGui::SameLine();
    if (ImGui::BeginChild("##outline", ImVec2(0, 0), true)) {
      if (ImGui::Button("< Previous")) tour_.previous();
      ImGui::SameLine();
      if (ImGui::Button("Next >")) tour_.next();
      for (int i = 0; i < tour_.count(); ++i) {
        const TourStop& o = tour_.tour().stops[static_cast<size_t>(i)];
        const auto blocks = parse_caption(o.caption);
        std::string head = std::to_string(i + 1) + ". ";
        if (!blocks.empty())
          for (const auto& sp : blocks.front().spans) head += sp.text;
        if (head.size() > 60) head = head.substr(0, 57) + "...";
        if (ImGui::Selectable((head + "##stop" + std::to_string(i)).c_str(), i == tour_.index())) tour_.go(i);
      }
      content_h = std::max(content_h, ImGui::GetCursorPosY() + ImGui::GetStyle().WindowPadding.y);
    }
    ImGui::EndChild();
    caption_wanted_ = content_h + ImGui::GetFrameHeight() + 2.f * ImGui::GetStyle().WindowPadding.y + 4.f;
  }
  ImGui::End();
  if (!open) stop_tour();
}

}  // namespace mnemo::app
