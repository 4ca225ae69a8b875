// Memory: the slots x d memory after the step (diverging colours, 0 = white), and per
// slot its norm and how far it turned from the previous step (cosine).
#include "app/gui/panels/panels.h"
#include "core/models/capabilities.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

void MemoryPanel::draw(PanelContext& ctx) {
  image_.set_api(&ctx.textures);
  map_h_ = 0.f;  // until the map is drawn below
  colorbar_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  if (!step || step->memformer.memory.empty()) {
    ImGui::TextDisabled(step ? "This model's trace has no memory." : "Step to a segment to see the memory.");
    return;
  }
  const int k = step->memformer.slots, d = step->memformer.dim;
  ImGui::Text("%d slots x %d dims after segment %lld", k, d, static_cast<long long>(step->segment));
  ui::help_marker(
      "Top: the memory after this step (blue negative, white 0, red positive).\n"
      "Table: ||m|| per slot, cos = cosine between the slot before and after this step,\n"
      "drift = 1 - cos (0: unchanged direction, 1: orthogonal, 2: reversed). Click a header to sort.");
  export_button(ctx, PanelId::kMemory);
  // A Memformer without memory (the "w/o memory" ablation) carries its initial slots through
  // untouched: say so, or the table's drift 0 reads as a memory that chose to keep everything.
  const ViewSource* info = ctx.view.info.get();
  if (info && capabilities_of(info->cfg.model).architecture == Architecture::kEncoderDecoder && !info->cfg.memory)
    ui::text_wrapped_at_spaces("memory off (the \"w/o memory\" ablation): nothing reads or writes these slots; "
                               "they stay the initial memory");

  if (step != last_step_) {
    ++key_;
    last_step_ = step;
    drift_.assign(step->memformer.cos_prev.size(), NAN);
    for (size_t i = 0; i < step->memformer.cos_prev.size(); ++i) drift_[i] = 1.f - step->memformer.cos_prev[i];
  }
  const float m = step->memformer.memory_absmax > 0.f ? step->memformer.memory_absmax : 1.f;
  image_.update(key_, step->memformer.memory.data(), k, d, -m, m, viz::Colormap::Diverging);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float map_h = std::max(ImGui::GetTextLineHeight() * 5.f, avail.y * 0.55f);
  ui::HeatmapAxes axes;
  axes.highlight_row = ctx.vm.selected_slot();
  axes.colorbar = &colorbar_;
  axes.cmap = viz::Colormap::Diverging;
  axes.vmin = -m;
  axes.vmax = m;
  axes.colorbar_label = "value";
  axes.y_title = "slot";
  axes.x_title = "dimension";
  auto hit = ui::draw_heatmap("##memory", image_, ImVec2(avail.x, map_h), axes);
  map_h_ = hit.plot_max.y - hit.plot_min.y;
  if (hit.hovered) {
    const float v = step->memformer.memory[static_cast<size_t>(hit.row) * static_cast<size_t>(d) + static_cast<size_t>(hit.col)];
    ImGui::BeginTooltip();
    ImGui::Text("slot %d, dim %d: %.6f", hit.row, hit.col, v);
    if (static_cast<size_t>(hit.row) < step->memformer.slot_norm.size()) ImGui::Text("||m|| %.4f", step->memformer.slot_norm[static_cast<size_t>(hit.row)]);
    if (static_cast<size_t>(hit.row) < step->memformer.cos_prev.size())
      ImGui::Text("cos to previous step %.4f", step->memformer.cos_prev[static_cast<size_t>(hit.row)]);
    slot_tooltip_lines(ctx, hit.row);
    ImGui::EndTooltip();
    if (hit.clicked) ctx.vm.toggle_slot(hit.row);
  }

  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchSame;
  if (!ImGui::BeginTable("##memtable", 4, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("slot", ImGuiTableColumnFlags_DefaultSort);
  ImGui::TableSetupColumn("||m||");
  ImGui::TableSetupColumn("cos");
  ImGui::TableSetupColumn("drift");
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs()) {
    if (specs->SpecsDirty && specs->SpecsCount > 0) {
      const auto& s = specs->Specs[0];
      sort_column_ = s.ColumnIndex;
      order_ = s.ColumnIndex == 0 ? SortOrder::kSlot
               : (s.SortDirection == ImGuiSortDirection_Descending ? SortOrder::kValueDescending : SortOrder::kValueAscending);
      specs->SpecsDirty = false;
    }
  }
  const std::vector<float>* col = sort_column_ == 1 ? &step->memformer.slot_norm : sort_column_ == 2 ? &step->memformer.cos_prev : &drift_;
  if (sorted_for_ != step || sorted_column_ != sort_column_ || sorted_order_ != order_ ||
      rows_.size() != static_cast<size_t>(k)) {
    if (sort_column_ == 0 || col->size() != static_cast<size_t>(k)) {
      rows_ = sorted_slots(std::vector<float>(static_cast<size_t>(k), 0.f), SortOrder::kSlot);
    } else {
      rows_ = sorted_slots(*col, order_);
    }
    sorted_for_ = step;
    sorted_column_ = sort_column_;
    sorted_order_ = order_;
  }
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  scroll_selected_row_into_view(ctx, rows_, row_h, &scrolled_selection_);
  auto cell = [](const std::vector<float>& v, int i) {
    if (static_cast<size_t>(i) >= v.size()) {
      ImGui::TextDisabled("-");
      return;
    }
    value_cell(v[static_cast<size_t>(i)]);
  };
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()), row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const int slot = rows_[static_cast<size_t>(r)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      slot_row_label(ctx, slot);
      ImGui::TableNextColumn();
      cell(step->memformer.slot_norm, slot);
      ImGui::TableNextColumn();
      cell(step->memformer.cos_prev, slot);
      ImGui::TableNextColumn();
      cell(drift_, slot);
    }
  }
  ImGui::EndTable();
}

}  // namespace mnemo::app
