// Slot timeline: slots x visited segments coloured by the writer's self-attention mass, so
// slots that hold their content for long (bright rows) stand apart from rewritten ones.
#include "app/gui/panels/panels.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

void TimelinePanel::draw(PanelContext& ctx) {
  image_.set_api(&ctx.textures);
  colorbar_.set_api(&ctx.textures);
  const SessionView& s = ctx.session;
  const uint64_t info_id = s.info ? s.info->id : 0;
  if (s.visited_version != last_visited_ || info_id != last_info_) {
    last_visited_ = s.visited_version;
    last_info_ = info_id;
    ++key_;
    segments_.clear();
    labels_.clear();
    slots_ = 0;
    for (const auto& [seg, rec] : s.visited) {
      if (rec->self_mass.empty()) continue;
      if (slots_ == 0) slots_ = static_cast<int>(rec->self_mass.size());
      segments_.push_back(seg);
      labels_.push_back(std::to_string(seg));
    }
    const size_t cols = segments_.size();
    values_.assign(static_cast<size_t>(slots_) * cols, NAN);
    size_t c = 0;
    for (const auto& [seg, rec] : s.visited) {
      if (rec->self_mass.empty()) continue;
      const size_t n = std::min(rec->self_mass.size(), static_cast<size_t>(slots_));
      for (size_t i = 0; i < n; ++i) values_[i * cols + c] = rec->self_mass[i];
      ++c;
    }
  }
  if (segments_.empty()) {
    ImGui::TextDisabled("Step through segments to fill the timeline (one column per visited segment).");
    return;
  }
  ImGui::Text("%d slots x %zu visited segments", slots_, segments_.size());
  ui::help_marker(
      "Colour: the writer's self-attention mass of each slot at each visited segment (mean over heads).\n"
      "Bright rows keep their content across segments; dark rows are rewritten by the segment.\n"
      "Click: select the slot. Double-click: go to that segment.");
  export_button(ctx, PanelId::kTimeline);

  image_.update(key_, values_.data(), slots_, static_cast<int>(segments_.size()), 0.f, 1.f, viz::Colormap::Viridis);
  ui::HeatmapAxes axes;
  axes.col_labels = &labels_;
  axes.highlight_row = ctx.vm.selected_slot();
  auto cur = std::lower_bound(segments_.begin(), segments_.end(), s.position);
  axes.highlight_col = cur != segments_.end() && *cur == s.position ? static_cast<int>(cur - segments_.begin()) : -1;
  axes.colorbar = &colorbar_;
  axes.vmin = 0.f;
  axes.vmax = 1.f;
  axes.colorbar_label = "self mass";
  axes.y_title = "slot";
  axes.x_title = "visited segment";
  auto hit = ui::draw_heatmap("##timeline", image_, ImGui::GetContentRegionAvail(), axes);
  if (hit.hovered) {
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
}

}  // namespace mnemo::app
