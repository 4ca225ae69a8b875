// Slot timeline: slots x visited segments coloured by the writer's self-attention mass, so
// slots that hold their content for long (bright rows) stand apart from rewritten ones.
#include "app/gui/panels/panels.h"

#include "app/figures/figures.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

void TimelinePanel::draw(PanelContext& ctx) {
  image_.set_api(&ctx.textures);
  map_h_ = 0.f;  // until the map is drawn below
  holds_rows_shown_ = -1;
  colorbar_.set_api(&ctx.textures);
  const PublishedView& s = ctx.view;
  const uint64_t info_id = s.info ? s.info->id : 0;
  if (s.visited_version != last_visited_ || info_id != last_info_) {
    last_visited_ = s.visited_version;
    last_info_ = info_id;
    ++key_;
    labels_.clear();
    slots_ = 0;
    std::vector<int64_t> visited;
    for (const auto& [seg, rec] : s.visited) {
      if (rec->self_mass.empty()) continue;
      if (slots_ == 0) slots_ = static_cast<int>(rec->self_mass.size());
      visited.push_back(seg);
    }
    segments_ = columns_of(visited);
    for (int64_t seg : segments_) labels_.push_back(seg < 0 ? "..." : std::to_string(seg));
    const size_t cols = segments_.size();
    values_.assign(static_cast<size_t>(slots_) * cols, NAN);  // a gap column stays NaN (drawn grey: gap_cols below)
    for (size_t c = 0; c < cols; ++c) {
      if (segments_[c] < 0) continue;
      const auto& rec = *s.visited.at(segments_[c]);
      const size_t n = std::min(rec.self_mass.size(), static_cast<size_t>(slots_));
      for (size_t i = 0; i < n; ++i) values_[i * cols + c] = rec.self_mass[i];
    }
  }
  if (segments_.empty()) {
    ImGui::TextDisabled("Step through segments to fill the timeline (one column per visited segment).");
    return;
  }
  const size_t shown = static_cast<size_t>(std::count_if(segments_.begin(), segments_.end(), [](int64_t g) { return g >= 0; }));
  ImGui::Text("%d slots x %zu visited segments", slots_, shown);
  ui::help_marker(
      "Colour: the writer's self-attention mass of each slot at each visited segment (mean over heads).\n"
      "Bright rows keep their content across segments; dark rows are rewritten by the segment.\n"
      "A grey column marked ... stands for segments computed on the way (a jump) but not shown.\n"
      "Click: select the slot. Double-click: go to that segment.");
  export_button(ctx, PanelId::kTimeline);
  const int sel = ctx.vm.selected_slot();
  bool any_prov = false;
  for (const auto& [seg, rec] : s.visited) any_prov = any_prov || !rec->prov_top.empty();
  if (any_prov) {
    ImGui::SameLine();
    ImGui::Checkbox("what the slot holds", &holds_);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Under the map: the selected slot's largest source tokens after each visited step\n"
                        "(its provenance, docs/gui.md#provenance), and its share of the initial memory");
  }
  ImVec2 map_size = ImGui::GetContentRegionAvail();
  const bool show_holds = holds_ && any_prov && s.info && s.info->doc;
  // A wide, short panel (a presenter's tour stop, a row of maps) puts the list beside the map,
  // which keeps the panel's height: under it, map and list would each get a sliver.
  const bool beside = show_holds && sel >= 0 && map_size.x >= 2.f * map_size.y;
  // A row's five sources flow onto the lines its column needs (draw_holds); where the three
  // columns would leave room for fewer than three a line, the list drops its "initial" column
  // (the share ends the row's flow) and gives the sources the width.
  const ImGuiStyle& st = ImGui::GetStyle();
  const float item_w = ImGui::CalcTextSize("#000 'x' 0.000  ").x;
  auto per_line = [&](float table_w, bool narrow) {
    const float fixed = ImGui::CalcTextSize(narrow ? "seg.  " : "segment  100.0%  ").x + (narrow ? 4.f : 6.f) * st.CellPadding.x;
    return std::max(1.f, std::floor((table_w - fixed) / item_w));
  };
  const bool narrow = beside || per_line(map_size.x, false) < 3.f;
  if (beside) map_size.x = std::round(map_size.x * 0.36f);
  // Else the list under the map gets a row per visited step (up to 8) and its headings; the map
  // keeps at least 45 % of the panel (a short panel, a large UI scale; the list scrolls).
  if (show_holds && !beside) {
    const float rows = static_cast<float>(std::min<size_t>(s.visited.size(), 8));
    const float row_h = ImGui::GetTextLineHeight() + 2.f * st.CellPadding.y;
    const float lines = std::ceil((narrow ? 6.f : 5.f) / per_line(map_size.x, narrow));
    const float list_h = row_h * (rows * lines + 1.f) + ImGui::GetTextLineHeightWithSpacing() + 2.f * st.ItemSpacing.y;
    map_size.y = std::max(map_size.y * 0.45f, map_size.y - list_h);
  }

  if (static_cast<int>(ctx.seq_cmap) != last_cmap_) {
    last_cmap_ = static_cast<int>(ctx.seq_cmap);
    ++key_;
  }
  std::vector<char> gaps(segments_.size());
  bool any_gap = false;
  for (size_t c = 0; c < segments_.size(); ++c) any_gap = any_gap || (gaps[c] = segments_[c] < 0);
  image_.update(key_, values_.data(), slots_, static_cast<int>(segments_.size()), 0.f, 1.f, ctx.seq_cmap, &gaps);
  // The legend of the grey column, under the title line, where the map keeps room for it (a
  // presenter-size panel keeps its map; the column's tooltip and the help say the same).
  const float sw = ImGui::GetTextLineHeight();
  if (any_gap && map_size.y - sw > 8.f * sw) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImU32 grey = IM_COL32(ui::HeatmapImage::kGapGrey, ui::HeatmapImage::kGapGrey, ui::HeatmapImage::kGapGrey, 255);
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + sw, p.y + sw), grey);
    ImGui::Dummy(ImVec2(sw, sw));
    ImGui::SameLine();
    ImGui::TextDisabled("... : segments stepped on the way (a jump), not shown");
    map_size.y -= sw + ImGui::GetStyle().ItemSpacing.y;  // the legend's line
  }
  ui::HeatmapAxes axes;
  axes.col_labels = &labels_;
  axes.highlight_row = ctx.vm.selected_slot();
  auto cur = std::find(segments_.begin(), segments_.end(), s.position);
  axes.highlight_col = cur != segments_.end() && s.position >= 0 ? static_cast<int>(cur - segments_.begin()) : -1;
  axes.colorbar = &colorbar_;
  axes.cmap = ctx.seq_cmap;
  axes.vmin = 0.f;
  axes.vmax = 1.f;
  axes.colorbar_label = "self mass";
  axes.y_title = "slot";
  // A short map (a presenter's tour stop) leaves its axis title out (the line above says
  // "visited segments"), so its rows keep that line.
  if (map_size.y >= 9.f * ImGui::GetTextLineHeight()) axes.x_title = "visited segment";
  auto hit = ui::draw_heatmap("##timeline", image_, map_size, axes);
  map_h_ = hit.plot_max.y - hit.plot_min.y;
  if (hit.hovered && segments_[static_cast<size_t>(hit.col)] < 0) {
    const int64_t before = hit.col > 0 ? segments_[static_cast<size_t>(hit.col) - 1] : -1;
    const int64_t after = static_cast<size_t>(hit.col) + 1 < segments_.size() ? segments_[static_cast<size_t>(hit.col) + 1] : -1;
    ImGui::SetTooltip("segments %lld..%lld were computed on the way but not shown (step to one to see it)",
                      static_cast<long long>(before + 1), static_cast<long long>(after - 1));
  } else if (hit.hovered) {
    const int64_t seg = segments_[static_cast<size_t>(hit.col)];
    const float v = values_[static_cast<size_t>(hit.row) * segments_.size() + static_cast<size_t>(hit.col)];
    const SlotType t = classify_mass(v, ctx.vm.thresholds());
    ImGui::BeginTooltip();
    ImGui::Text("slot %d at segment %lld", hit.row, static_cast<long long>(seg));
    ImGui::Text("self mass %.4f:", v);
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(slot_type_color(t)), "%s", slot_type_name(t));
    ImGui::TextDisabled("click: select slot; double-click: go to segment %lld", static_cast<long long>(seg));
    ImGui::EndTooltip();
    if (hit.clicked) ctx.vm.select_slot(hit.row);
    if (!ctx.preview && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) ctx.control.jump(seg);
  }
  if (show_holds && beside) {
    ImGui::SameLine();
    if (ImGui::BeginChild("##holds_beside", ImVec2(0.f, map_size.y), false, ImGuiWindowFlags_NoScrollbar)) draw_holds(ctx, sel, true);
    ImGui::EndChild();
  } else if (show_holds) {
    draw_holds(ctx, sel, narrow);
  }
}

std::vector<int64_t> TimelinePanel::columns_of(const std::vector<int64_t>& visited) {
  std::vector<int64_t> cols;
  for (size_t i = 0; i < visited.size(); ++i) {
    if (i > 0 && visited[i] > visited[i - 1] + 1) cols.push_back(-1);
    cols.push_back(visited[i]);
  }
  return cols;
}

void TimelinePanel::draw_holds(PanelContext& ctx, int slot, bool narrow) {
  const PublishedView& s = ctx.view;
  if (slot < 0) {
    // One line, shortened with "…" in a narrow side-by-side column (the whole text on hover).
    ui::text_one_line("Select a slot to see what it holds after each visited step.", ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    return;
  }
  ui::text_one_line("What slot " + std::to_string(slot) + " holds: its largest sources after each step", ImGui::GetStyleColorVec4(ImGuiCol_Text));
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit;
  const ImVec2 table_size = ImGui::GetContentRegionAvail();
  const float table_bottom = ImGui::GetCursorScreenPos().y + table_size.y;
  holds_rows_shown_ = 0;
  if (!ImGui::BeginTable("##holds", narrow ? 2 : 3, flags, table_size)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(narrow ? "seg." : "segment");
  if (!narrow) ImGui::TableSetupColumn("initial");
  ImGui::TableSetupColumn(narrow ? "top sources, initial memory" : "top sources (token 'text' share)", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  const Document& doc = *s.info->doc;
  char buf[96];
  // Newest first: the shown step's row is the one a user reads.
  for (auto it = s.visited.rbegin(); it != s.visited.rend(); ++it) {
    const auto& rec = *it->second;
    if (rec.prov_top_k <= 0 || static_cast<size_t>(slot + 1) * rec.prov_top_k > rec.prov_top.size()) continue;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (it->first == s.position) ImGui::TextColored(ImVec4(1.f, 0.73f, 0.03f, 1.f), "%lld", static_cast<long long>(it->first));
    else ImGui::Text("%lld", static_cast<long long>(it->first));
    const float initial = 100.f * (static_cast<size_t>(slot) < rec.prov_initial.size() ? rec.prov_initial[slot] : 0.f);
    if (!narrow) {
      ImGui::TableNextColumn();
      ImGui::Text("%.1f%%", initial);
    }
    ImGui::TableNextColumn();
    // The sources flow onto as many lines as the column needs (a narrow panel shows them all).
    bool any = false;
    auto item = [&](const char* text) {
      if (any) {
        ImGui::SameLine(0.f, ImGui::CalcTextSize("  ").x);
        if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(text).x) ImGui::NewLine();
      }
      ImGui::TextUnformatted(text);
      any = true;
    };
    for (int k = 0; k < rec.prov_top_k; ++k) {
      const ProvenanceSource& src = rec.prov_top[static_cast<size_t>(slot) * rec.prov_top_k + k];
      if (src.token < 0) break;
      std::snprintf(buf, sizeof buf, "#%lld '%s' %.3f", static_cast<long long>(src.token), token_text(doc, src.token).c_str(),
                    src.weight);
      item(buf);
    }
    if (!any) item("(nothing from the document yet)");
    if (narrow) {
      std::snprintf(buf, sizeof buf, "initial %.1f%%", static_cast<double>(initial));
      item(buf);
    }
    // A row counts as shown when all of it is above the table's bottom edge (unscrolled).
    if (ImGui::GetItemRectMax().y <= table_bottom + 0.5f) ++holds_rows_shown_;
  }
  ImGui::EndTable();
}

}  // namespace mnemo::app
