// Slot types: counts and shares of retain / mix / overwrite under thresholds the user moves
// (re-classified at once by the ViewModel), and a per-slot strip (type over self mass).
#include "app/gui/panels/panels.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cstdio>

namespace mnemo::app {

void SlotTypesPanel::draw(PanelContext& ctx) {
  strip_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  if (!step || step->memformer.self_mass.empty()) {
    ImGui::TextDisabled(step ? "This model's trace has no writer attention to classify slots by."
                             : "Step to a segment to see slot types.");
    return;
  }
  const SlotTypeCounts c = ctx.vm.counts();
  const double n = static_cast<double>(c.total() > 0 ? c.total() : 1);
  ImGui::Text("%lld slots, segment %lld", static_cast<long long>(c.total()), static_cast<long long>(step->segment));
  ui::help_marker(
      "A slot's type comes from the writer's self-attention mass (column 'self', mean over heads):\n"
      "retain: mass >= retain threshold (keeps its content)\n"
      "overwrite: mass <= overwrite threshold (replaced by the segment)\n"
      "mix: in between.");
  export_button(ctx, PanelId::kSlotTypes);

  // One stacked bar (shares) and one legend line (counts): compact enough for 1280x720.
  // A short panel (a tour stop in presenter mode) keeps the counts line and the strip and
  // leaves out what repeats them: the bar (the counts' shares, also in the counts' tooltips)
  // and the "selected:" line (the strip outlines the slot; its tooltip has the same numbers).
  const float line_h = ImGui::GetTextLineHeight();
  const float full_sel_h = ImGui::GetTextLineHeightWithSpacing();  // the "selected:" line under the strip
  const float bar_h = ImGui::GetTextLineHeight() + 6.f;
  // The bar, the counts, the sliders, the strip at its full 7 lines and the selection line, with the spacing between.
  const bool short_panel = ImGui::GetContentRegionAvail().y < bar_h + ImGui::GetTextLineHeightWithSpacing() +
                                                                  2.f * ImGui::GetFrameHeightWithSpacing() + line_h * 7.f +
                                                                  full_sel_h + 3.f * ImGui::GetStyle().ItemSpacing.y;
  const float sel_h = short_panel ? 0.f : full_sel_h;
  const SlotType kinds[3] = {SlotType::kRetain, SlotType::kMix, SlotType::kOverwrite};
  const int64_t counts[3] = {c.retain, c.mix, c.overwrite};
  if (!short_panel) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::max(1.f, ImGui::GetContentRegionAvail().x);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p, ImVec2(p.x + w, p.y + bar_h), IM_COL32(255, 255, 255, 18));
    float x = p.x;
    for (int i = 0; i < 3; ++i) {
      const float ww = w * static_cast<float>(static_cast<double>(counts[i]) / n);
      if (ww <= 0.f) continue;
      dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + ww, p.y + bar_h), slot_type_color(kinds[i], 230));
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * static_cast<double>(counts[i]) / n);
      const float tw = ImGui::CalcTextSize(pct).x;
      if (tw + 6.f < ww)
        dl->AddText(ImVec2(x + 0.5f * (ww - tw), p.y + 3.f), IM_COL32(255, 255, 255, 255), pct);
      x += ww;
    }
    ImGui::Dummy(ImVec2(w, bar_h));
  }
  for (int i = 0; i < 3; ++i) {
    char text[48];
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(counts[i]));
    const float need = ImGui::CalcTextSize(slot_type_name(kinds[i])).x + ImGui::CalcTextSize(text).x + 4.f;
    if (i) {
      ImGui::SameLine(0.f, ImGui::GetFontSize());
      if (ImGui::GetContentRegionAvail().x < need) ImGui::NewLine();  // wrap in a narrow panel
    }
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(slot_type_color(kinds[i])), "%s", slot_type_name(kinds[i]));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%lld of %lld slots (%.1f%%)", static_cast<long long>(counts[i]), static_cast<long long>(c.total()),
                        100.0 * static_cast<double>(counts[i]) / n);
    ImGui::SameLine(0.f, 4.f);
    ImGui::TextUnformatted(text);
  }

  // Thresholds: the ViewModel keeps overwrite <= retain and re-classifies immediately.
  float retain = ctx.vm.thresholds().retain_min, overwrite = ctx.vm.thresholds().overwrite_max;
  // A short panel shows them as one line of text, so the strip below keeps its height without a
  // scrollbar; a taller panel gets the sliders back.
  if (short_panel) {
    ImGui::TextDisabled("retain >= %.3f, overwrite <= %.3f", retain, overwrite);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The thresholds: make the panel taller to move them.");
  } else {
    const float label_w = ImGui::CalcTextSize("overwrite <=").x + ImGui::GetStyle().ItemInnerSpacing.x;
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - label_w);
    if (ImGui::SliderFloat("retain >=", &retain, 0.f, 1.f, "%.3f")) ctx.vm.set_retain_min(retain);
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - label_w);
    if (ImGui::SliderFloat("overwrite <=", &overwrite, 0.f, 1.f, "%.3f")) ctx.vm.set_overwrite_max(overwrite);
  }

  // Strip: row 0 = type colour, row 1 = self mass (viridis 0..1).
  const int k = static_cast<int>(ctx.vm.slot_types().size());
  if (ctx.vm.types_version() != last_types_) {
    last_types_ = ctx.vm.types_version();
    ++key_;
    rgba_.resize(static_cast<size_t>(k) * 2 * 4);
    ui::ColorLut lut(viz::Colormap::Viridis);
    auto* px = reinterpret_cast<uint32_t*>(rgba_.data());
    for (int i = 0; i < k; ++i) {
      px[i] = slot_type_color(ctx.vm.slot_types()[static_cast<size_t>(i)]);
      px[k + i] = lut.at(ctx.vm.self_mass()[static_cast<size_t>(i)]);
    }
  }
  strip_.update_rgba(key_, rgba_.data(), 2, k);
  static const std::vector<std::string> kRows = {"type", "self"};
  ui::HeatmapAxes axes;
  axes.row_labels = &kRows;
  axes.highlight_col = ctx.vm.selected_slot();
  // A short panel leaves out the axis title "slot" (the counts line says slots; hover names
  // each), so both rows keep a line's height and their labels "type" and "self" stay.
  if (!short_panel) axes.x_title = "slot";
  // Tall enough for both rows and the slot axis even in a short window (the panel scrolls).
  // (The slot axis, its numbers and title, are drawn under the strip's height.)
  const float axis_h = 2.f * ImGui::GetTextLineHeightWithSpacing();
  const float h = std::max(line_h * (short_panel ? 4.f : 5.f),
                           std::min(ImGui::GetContentRegionAvail().y - sel_h - axis_h - ImGui::GetStyle().ItemSpacing.y, line_h * 7.f));
  auto hit = ui::draw_heatmap("##strip", strip_, ImVec2(ImGui::GetContentRegionAvail().x, h), axes);
  strip_min_ = hit.plot_min;
  strip_max_ = hit.plot_max;
  if (hit.hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("slot %d", hit.col);
    slot_tooltip_lines(ctx, hit.col);
    ImGui::TextDisabled("click: select slot %d in every panel", hit.col);
    ImGui::EndTooltip();
    if (hit.clicked) ctx.vm.toggle_slot(hit.col);
  }
  const int sel = ctx.vm.selected_slot();
  if (sel >= 0 && sel < k && !short_panel) {
    ImGui::Text("selected: slot %d,", sel);
    ImGui::SameLine();
    slot_tooltip_lines(ctx, sel);
  }
}

}  // namespace mnemo::app
