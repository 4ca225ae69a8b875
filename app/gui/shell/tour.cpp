// Guided tours in the shell (docs/gui.md#tours): the Tour menu, applying a stop (model,
// document, segment, panels, selection), the caption panel with its outline of stops, and
// presenter mode's settings. The tour file itself is read by app/gui/model/tour.h.
#include "app/gui/shell/shell.h"

#include "app/gui/model/tour_check.h"
#include "app/gui/model/worker.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/panels/widgets/texture.h"
#include "app/gui/platform/window.h"
#include "app/gui/shell/layout.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>

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
  return view_shows_stop(st, s) && s.step && s.step->segment == st.segment;
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
    if (!view_shows_stop(*st, s))
      control.open_document_and_model(st->document, st->cfg, 0, st->checkpoint, st->segment_len);
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
    vm_.set_head(st->select.head, s.step->memformer.heads);
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
  const ImVec2 work(vp->Size.x, vp->Size.y - menu_h);
  caption_used_wanted_ = caption_wanted_;
  const PanelRect r = tour_caption_rect(ImVec2(vp->Pos.x, vp->Pos.y + menu_h), work, caption_wanted_);
  // The most the caption may take: half the work area, less when the stop's panels need the
  // room (a title bar and 9 text lines per row of tiles, and the Document strip's text).
  float caption_limit = tour_caption_rect(ImVec2(0, 0), work, 1e9f).size.y;
  {
    int n = 0;
    bool doc = false, types = false;
    for (const auto& name : st->panels) {
      const int i = panel_of_tour_name(name);
      if (i < 0) continue;
      if (i == static_cast<int>(PanelId::kDocument)) doc = true;
      else ++n;
      if (i == static_cast<int>(PanelId::kSlotTypes)) types = true;
    }
    const float line = ImGui::GetTextLineHeightWithSpacing();
    // (The Slot types panel's counts, bar, thresholds line, strip and selection take 13 lines;
    // another panel's header lines and a map of 2.5 lines fit in 7, which leaves the caption
    // the room to stay readable on a projector: tour_screen_problems checks both.)
    const float tile = ImGui::GetFrameHeight() + (types ? 13.f : 7.f) * line;
    const float doc_h = doc ? std::min(panel<DocumentPanel>(PanelId::kDocument).wanted_height(), ImGui::GetFrameHeight() + 6.f * line) : 0.f;
    const float need = (n == 0 ? 0.f : n <= 3 ? tile : 2.f * tile) + doc_h;
    caption_limit = std::max(tour_caption_rect(ImVec2(0, 0), work, 0.f).size.y, std::min(caption_limit, work.y - need));
  }
  const bool force = tour_layout_ || caption_relayout_;
  ImGui::SetNextWindowPos(r.pos, force ? ImGuiCond_Always : ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(r.size, force ? ImGuiCond_Always : ImGuiCond_FirstUseEver);
  // A stop starts with the full outline; when its text then wants more than the caption panel
  // may take (half the work area), the outline shrinks to the stops' numbers for this stop.
  // Still too tall beside the narrow outline: a smaller font for the text (down to 0.55 of the
  // UI font), found in a few frames (the text's height goes with the square of the font size).
  if (caption_compact_stop_ != tour_.index()) {
    caption_compact_stop_ = tour_.index();
    caption_compact_ = false;
    caption_font_scale_ = 1.f;
  } else if (!caption_compact_ && caption_wanted_ > caption_limit + 0.5f) {
    caption_compact_ = true;
  } else if (caption_compact_ && caption_wanted_ > caption_limit + 0.5f && caption_font_scale_ > 0.55f) {
    caption_font_scale_ = std::max(0.55f, caption_font_scale_ * std::min(0.99f, std::sqrt(caption_limit / caption_wanted_)));
  }
  bool open = true;
  const std::string title = "Tour: " + tour_.tour().title + "###Tour";
  const bool caption_visible = ImGui::Begin(title.c_str(), &open);
  caption_rect_ = PanelRect{ImGui::GetWindowPos(), ImGui::GetWindowSize()};
  caption_frame_ = ImGui::GetFrameCount();
  caption_scroll_max_ = 0.f;
  if (caption_visible) {
    // Left: the caption. Right: the outline of every stop (click to go there).
    const float outline_w = caption_compact_ ? ImGui::CalcTextSize("< Previous").x + 2.f * ImGui::GetStyle().FramePadding.x +
                                                   2.f * ImGui::GetStyle().WindowPadding.x + 4.f
                                             : std::min(ImGui::GetContentRegionAvail().x * 0.3f, ImGui::GetFontSize() * 22.f);
    float content_h = 0.f;  // what the caption and the outline need (caption_wanted_ for the next frame)
    if (ImGui::BeginChild("##caption", ImVec2(ImGui::GetContentRegionAvail().x - outline_w - 8.f, 0), false)) {
      ImGui::SetWindowFontScale(caption_font_scale_);
      if (caption_compact_)
        ImGui::TextDisabled("Stop %d of %d  |  %s, segment %lld", tour_.index() + 1, tour_.count(), st->model.c_str(),
                            static_cast<long long>(st->segment));
      else {
        // With the keys when they fit on the line (a presenter's 1280x720 cut them at "Es").
        char line[512];
        std::snprintf(line, sizeof line, "Stop %d of %d  |  %s, segment %lld  |  Right / PageDown: next, Left / PageUp: previous, Esc: end",
                      tour_.index() + 1, tour_.count(), st->model.c_str(), static_cast<long long>(st->segment));
        if (ImGui::CalcTextSize(line).x > ImGui::GetContentRegionAvail().x)
          std::snprintf(line, sizeof line, "Stop %d of %d  |  %s, segment %lld", tour_.index() + 1, tour_.count(), st->model.c_str(),
                        static_cast<long long>(st->segment));
        ImGui::TextDisabled("%s", line);
      }
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
      caption_scroll_max_ = ImGui::GetScrollMaxY();
    }
    ImGui::EndChild();
    ImGui::SameLine();
    float outline_end = -1.f;  // compact: where the buttons end (the numbers below need no room)
    if (ImGui::BeginChild("##outline", ImVec2(0, 0), true)) {
      if (caption_compact_) {
        // Narrow: the buttons one under the other, then the stops' numbers (hover: the heading).
        const float bw = ImGui::GetContentRegionAvail().x;
        if (ImGui::Button("< Previous", ImVec2(bw, 0))) tour_.previous();
        if (ImGui::Button("Next >", ImVec2(bw, 0))) tour_.next();
        // The stops' numbers in rows of three where whole rows fit under the buttons: the
        // caption's height does not grow for them (the buttons and the caption's "Stop N of M"
        // line navigate without them), so a tour of many stops leaves its caption text the room.
        outline_end = ImGui::GetCursorPosY();
        const float row_h = ImGui::GetTextLineHeightWithSpacing();
        for (int i = 0; i < tour_.count(); ++i) {
          const std::string n = std::to_string(i + 1);
          if (i % 3 == 0 && ImGui::GetContentRegionAvail().y < row_h) break;
          if (i % 3) ImGui::SameLine();
          if (ImGui::Selectable((n + "##stop" + n).c_str(), i == tour_.index(), 0, ImVec2(ImGui::CalcTextSize("00").x, 0)))
            tour_.go(i);
          if (ImGui::IsItemHovered()) {
            const auto blocks = parse_caption(tour_.tour().stops[static_cast<size_t>(i)].caption);
            std::string head;
            if (!blocks.empty())
              for (const auto& sp : blocks.front().spans) head += sp.text;
            ImGui::SetTooltip("%d. %s", i + 1, head.c_str());
          }
        }
      }
      if (!caption_compact_) {
        if (ImGui::Button("< Previous")) tour_.previous();
        ImGui::SameLine();
        if (ImGui::Button("Next >")) tour_.next();
      }
      for (int i = 0; i < (caption_compact_ ? 0 : tour_.count()); ++i) {
        const TourStop& o = tour_.tour().stops[static_cast<size_t>(i)];
        const auto blocks = parse_caption(o.caption);
        std::string head = std::to_string(i + 1) + ". ";
        if (!blocks.empty())
          for (const auto& sp : blocks.front().spans) head += sp.text;
        if (head.size() > 60) head = head.substr(0, 57) + "...";
        // Shortened with "..." to the outline's width (cut mid-word at its edge before).
        const float room = ImGui::GetContentRegionAvail().x;
        if (ImGui::CalcTextSize(head.c_str()).x > room) {
          while (head.size() > 4 && ImGui::CalcTextSize((head + "...").c_str()).x > room) {
            head.pop_back();
            while (!head.empty() && (static_cast<unsigned char>(head.back()) & 0xC0) == 0x80) head.pop_back();  // whole UTF-8 characters
          }
          head += "...";
        }
        if (ImGui::Selectable((head + "##stop" + std::to_string(i)).c_str(), i == tour_.index())) tour_.go(i);
      }
      content_h = std::max(content_h, (outline_end >= 0.f ? outline_end : ImGui::GetCursorPosY()) + ImGui::GetStyle().WindowPadding.y);
    }
    ImGui::EndChild();
    caption_wanted_ = content_h + ImGui::GetFrameHeight() + 2.f * ImGui::GetStyle().WindowPadding.y + 4.f;
  }
  ImGui::End();
  if (!open) stop_tour();
}

// The smallest caption font a stop may need, as a fraction of the UI font (tour_screen_problems).
constexpr float kMinCaptionFontScale = 0.75f;

std::vector<std::string> Shell::tour_screen_problems(const PublishedView& s) const {
  std::vector<std::string> out;
  const TourStop* st = tour_.current();
  if (!st) return out;
  const int frame = ImGui::GetFrameCount();
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const float font = ImGui::GetFontSize();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  auto px = [](float v) { return std::to_string(static_cast<int>(std::lround(v))); };
  const bool caption_drawn = caption_frame_ >= frame - 1;
  if (!caption_drawn) out.push_back("the caption panel is not drawn");
  for (const auto& name : st->panels) {
    const int i = panel_of_tour_name(name);
    if (i < 0) continue;
    const PanelId id = static_cast<PanelId>(i);
    const std::string title = panel_def(id).title;
    std::string why;
    if (!panel_applies(id, s, &why)) {
      out.push_back("the " + title + " panel does not apply to this model: " + why);
      continue;
    }
    const PanelWindow& w = windows_[static_cast<size_t>(i)];
    if (!w.open || w.drawn_frame < frame - 1) {
      out.push_back("the " + title + " panel is not drawn");
      continue;
    }
    const PanelRect& r = w.last_rect;
    const float right = r.pos.x + r.size.x, bottom = r.pos.y + r.size.y;
    if (r.pos.x < -0.5f || r.pos.y < -0.5f || right > display.x + 0.5f || bottom > display.y + 0.5f)
      out.push_back("the " + title + " panel reaches outside the window (" + px(r.pos.x) + "," + px(r.pos.y) + " to " +
                    px(right) + "," + px(bottom) + " of " + px(display.x) + "x" + px(display.y) + ")");
    if (caption_drawn && bottom > caption_rect_.pos.y + 0.5f && r.pos.y < caption_rect_.pos.y + caption_rect_.size.y &&
        right > caption_rect_.pos.x && r.pos.x < caption_rect_.pos.x + caption_rect_.size.x)
      out.push_back("the caption covers the " + title + " panel's lower " + px(bottom - caption_rect_.pos.y) + " px");
    const float min_w = 12.f * font;
    if (r.size.x < min_w - 0.5f)
      out.push_back("the " + title + " panel is " + px(r.size.x) + " px wide, under its minimum " + px(min_w) + " (12 font heights)");
    const bool fills = (panel_def(id).window_flags & ImGuiWindowFlags_NoScrollbar) != 0;
    if (id == PanelId::kDocument) {
      // The Document scrolls through a long text by design; a strip must show its whole text.
      const float wanted = panel<DocumentPanel>(PanelId::kDocument).wanted_height();
      const float need = std::min(wanted, ImGui::GetFrameHeight() + 2.f * ImGui::GetStyle().WindowPadding.y + 6.f * line);
      if (r.size.y + 0.5f < need)
        out.push_back("the Document panel is " + px(r.size.y) + " px tall, under the " + px(need) +
                      " px its text needs (6 lines, or all of a shorter text)");
    } else if (fills) {
      const float need = ImGui::GetFrameHeight() + 6.f * line;
      if (r.size.y + 0.5f < need)
        out.push_back("the " + title + " panel is " + px(r.size.y) + " px tall, under its minimum " + px(need) +
                      " (a title bar and 6 lines of text): its map is squeezed");
    } else if (id != PanelId::kTimeline && w.scroll_max_y > 0.5f) {
      // (The Document scrolls by design, a map panel fills its window, and the timeline's
      // list is checked below.)
      out.push_back("the " + title + " panel's content is " + px(w.scroll_max_y) + " px taller than the panel: it must be scrolled");
    }
    // A map shares its panel with what else the panel shows (the timeline's list of what a
    // slot holds, the Attention panel's block-mass bars, the writer's header lines): a panel
    // tall enough can still squeeze its map to a sliver. Every panel that records its map's
    // height (Panel::map_height(), 0 when it drew none) needs 2.5 lines of text for it.
    const float need_map = 2.5f * line;
    const float map_h = panels_[static_cast<size_t>(i)]->map_height();
    if (id == PanelId::kTimeline && map_h + 0.5f < need_map)
      out.push_back("the Slot timeline's map is " + px(map_h) + " px tall, under its minimum " + px(need_map) +
                    " (2.5 lines of text): its slots' rows cannot be told apart");
    else if (id != PanelId::kTimeline && map_h > 0.f && map_h + 0.5f < need_map)
      out.push_back("the " + title + " panel's map is " + px(map_h) + " px tall, under its minimum " + px(need_map) +
                    " (2.5 lines of text): its rows cannot be told apart");
    if (id == PanelId::kTimeline) {
      // The timeline's map and its "what slot N holds" list share the panel: each must be
      // readable, not the one kept at the other's expense.
      const TimelinePanel& tl = panel<TimelinePanel>(PanelId::kTimeline);
      if (tl.holds_rows_shown() == 0)
        out.push_back("the Slot timeline's list of what slot " + std::to_string(vm_.selected_slot()) +
                      " holds shows no row in its " + px(r.size.y) + " px panel: it must be scrolled to be read");
    }
  }
  if (caption_drawn && (caption_scroll_max_ > 0.5f || caption_wanted_ > caption_rect_.size.y + 0.5f))
    out.push_back("the caption's text needs " + px(caption_wanted_) + " px, its panel is " + px(caption_rect_.size.y) +
                  " px: the text is cut and scrolls");
  // A caption too long for its panel is drawn in a smaller font (down to 0.55 of the UI font,
  // so it stays whole); a projector's audience needs at least kMinCaptionFontScale of it (at
  // presenter ui-scale 1.5: 17 px, more than the desktop's 15 px UI font), so a stop whose caption needs
  // less fails.
  if (caption_drawn && caption_font_scale_ < kMinCaptionFontScale - 1e-3f)
    out.push_back("the caption's font is shrunk to " + px(std::floor(100.f * caption_font_scale_)) + " % of the UI font to fit its panel, under the " +
                  px(100.f * kMinCaptionFontScale) + " % a projector needs: shorten the caption (or name fewer panels)");
  return out;
}

std::string TourScreen::describe() const {
  char b[96];
  if (ui_scale > 1.f) std::snprintf(b, sizeof b, "%dx%d, presenter ui-scale %.3g", width, height, ui_scale);
  else std::snprintf(b, sizeof b, "%dx%d", width, height);
  return b;
}

std::vector<std::string> check_tour_screen(const Tour& tour, Worker& worker, const TourScreen& screen) {
  std::vector<std::string> out;
  ImGuiContext* previous = ImGui::GetCurrentContext();
  ImGuiContext* ctx = ImGui::CreateContext();
  ImGui::SetCurrentContext(ctx);
  struct Restore {
    ImGuiContext* ctx;
    ImGuiContext* previous;
    ~Restore() {
      ImGui::DestroyContext(ctx);
      ImGui::SetCurrentContext(previous);
    }
  } restore{ctx, previous};
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.LogFilename = nullptr;
  io.DisplaySize = ImVec2(static_cast<float>(screen.width), static_cast<float>(screen.height));
  io.DeltaTime = 1.f / 60.f;
  const float scale = std::max(1.f, std::min(2.5f, screen.ui_scale));
  setup_style(scale);  // as the app's window at this UI scale (app/gui/app.cpp)
  const ui::UiFonts fonts = ui::load_fonts(15.f, scale);
  unsigned char* pixels = nullptr;
  int tw = 0, th = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &tw, &th);  // builds the atlas; no texture is made
  io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(intptr_t{1}));
  ui::NullTextureApi textures;
  {
    Shell shell(&textures, fonts, nullptr, nullptr);
    shell.presenter().ui_scale = scale;
    shell.start_tour(tour);
    shell.tour().go(0);
    int settled = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      ViewPtr s = worker.latest();
      io.DeltaTime = 1.f / 60.f;
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no pointer: no tooltip over the figures
      ImGui::NewFrame();
      shell.frame(s, worker);
      ImGui::Render();
      for (const auto& e : worker.take_errors()) throw InputError("tour " + tour.path + ": " + e);
      const TourStop* st = shell.tour().current();
      if (!st) break;
      if (!shell.tour_stop_shown(*s) || worker.busy()) {
        settled = 0;
        if (std::chrono::steady_clock::now() - t0 > std::chrono::minutes(10))
          throw InputError("tour " + tour.path + ", stop " + std::to_string(st->number) + ": not shown within 10 minutes");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      // The app's tour export takes its screenshot 5 frames after the stop is shown; the
      // layout settles within those (the Document strip follows its text a frame later).
      if (++settled < 6) continue;
      for (const auto& p : shell.tour_screen_problems(*s)) out.push_back("stop " + std::to_string(st->number) + ": " + p);
      if (!shell.tour().next()) break;
      settled = 0;
      t0 = std::chrono::steady_clock::now();
    }
  }
  return out;
}

}  // namespace mnemo::app
