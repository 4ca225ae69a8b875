#include "app/gui/panels/slot_effects_panel.h"

#include "app/figures/benefit.h"
#include "app/figures/slot_effects.h"
#include "app/gui/panels/widgets/heatmap.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

const SlotEffects* SlotEffectsPanel::shown(const PublishedView& s) {
  if (!s.slot_effects || !s.step || s.slot_effects->segment != s.step->segment || s.slot_effects->empty()) return nullptr;
  return s.slot_effects.get();
}

std::string SlotEffectsPanel::cell_text(const SlotEffects& fx, const Document& doc, size_t a, int64_t e, size_t k) {
  const int64_t t = fx.tokens.at(k);
  char line[320];
  std::snprintf(line, sizeof line, "%s, token %lld '%s' (removed = %s): %.3f bits saved | %.4g nats with it, %.4g without",
                fx.labels.at(static_cast<size_t>(e)).c_str(), static_cast<long long>(t), token_text(doc, t).c_str(),
                fx.ablations.at(a).c_str(), static_cast<double>(fx.bits(a, e, k)), static_cast<double>(fx.carried.at(k)),
                static_cast<double>(fx.removed.at(a).at(static_cast<size_t>(e)).at(k)));
  return line;
}

void SlotEffectsPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  image_.set_api(&ctx.textures);
  colorbar_.set_api(&ctx.textures);
  hovered_entry_ = -1;
  hovered_token_ = -1;
  if (!s.step) {
    ImGui::TextDisabled("Step to a segment, then compute what each memory entry did for its predictions.");
    return;
  }
  const SlotEffects* fx = shown(s);
  if (!fx) {
    if (ctx.control.busy())
      ImGui::TextDisabled("computing...");
    else if (!ctx.preview && ImGui::Button("compute slot effects"))
      ctx.control.compute_slot_effects();
    ui::text_wrapped_at_spaces("Steps segment " + std::to_string(s.step->segment) +
                               " again with each memory entry removed from the memory carried into it (reset to the "
                               "initial memory, and zeroed), on the model's thread.");
    return;
  }
  const char* names[] = {"removed = reset to the initial memory", "removed = zeroed"};
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16.f);
  ImGui::Combo("##ablation", &ablation_, names, 2);
  const int found = fx->ablation(ablation_ == 0 ? "reset" : "zeroed");
  const size_t a = static_cast<size_t>(std::max(0, found));
  ui::help_marker("Bits saved by an entry: what the tokens segment's step predicts cost more, in bits, with that entry\n"
                  "removed from the memory carried into the segment (> 0: it helped). Every entry removed at once and\n"
                  "the single entries' sum need not agree: removing entries together is not the sum of removing each.\n"
                  "The matrix: one row per entry (most helpful first, its bits saved after its name), one column per\n"
                  "predicted token; blue where the token costs more without the entry (it helped), red where it costs\n"
                  "less (it hurt), on a symmetric scale set by the largest effect of any entry on any token (the\n"
                  "colorbar). Hover a cell for its exact values.\n"
                  "Click a matrix row or a table row: select the entry (the Document panel's slot-effect tint shows\n"
                  "it token by token).");
  char line[256];
  std::snprintf(line, sizeof line,
                "segment %lld, %zu predicted tokens: every entry at once %+.2f bits, the single entries' sum %+.2f "
                "(they need not add up)",
                static_cast<long long>(fx->segment), fx->tokens.size(), fx->all_entries_bits(a), fx->sum_of_entries(a));
  ui::text_wrapped_at_spaces(line);
  if (!fx->entries_removed) ImGui::TextDisabled("segment 0 starts from the initial memory: nothing written to remove");
  // The matrix: entries (most helpful first) x the tokens the step predicts, step --by-slot's
  // figure (app/figures/slot_effects.h): bits with the entry - without it, blue where it helped.
  if (s.slot_effects != spec_of_ || found != spec_ablation_) {
    spec_ = s.info && s.info->doc ? slot_effects_heatmap(*fx, *s.info->doc, a) : viz::HeatmapSpec{};
    order_ = fx->ranking(a);
    spec_of_ = s.slot_effects;
    spec_ablation_ = found;
    ++key_;
  }
  if (spec_.rows > 0 && spec_.cols > 0 && static_cast<int64_t>(order_.size()) == spec_.rows) {
    image_.update(key_, spec_.values.data(), spec_.rows, spec_.cols, spec_.vmin, spec_.vmax, viz::Colormap::Diverging);
    ui::HeatmapAxes axes;
    axes.row_labels = &spec_.row_labels;
    axes.col_labels = &spec_.col_labels;
    axes.x_title = "predicted token";
    axes.y_title = fx->entry_kind + ", most helpful first";
    axes.colorbar = &colorbar_;
    axes.cmap = viz::Colormap::Diverging;
    axes.vmin = spec_.vmin;
    axes.vmax = spec_.vmax;
    char range[96];
    std::snprintf(range, sizeof range, "bits with it - without it, -%.2f..+%.2f", spec_.vmax, spec_.vmax);
    axes.colorbar_label = range;
    const auto sel = std::find(order_.begin(), order_.end(), static_cast<int64_t>(ctx.vm.selected_slot()));
    if (sel != order_.end()) axes.highlight_row = static_cast<int>(sel - order_.begin());
    const float line_h = ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float map_h = std::max(line_h * 8.f, avail.y * 0.62f);
    const ui::HeatmapHit hit = ui::draw_heatmap("##slot_effects_matrix", image_, ImVec2(avail.x, map_h), axes);
    plot_min_ = hit.plot_min;
    plot_max_ = hit.plot_max;
    if (hit.hovered && hit.row < spec_.rows && hit.col < spec_.cols) {
      const int64_t e = order_[static_cast<size_t>(hit.row)];
      hovered_entry_ = e;
      hovered_token_ = hit.col;
      ImGui::BeginTooltip();
      ImGui::TextUnformatted(cell_text(*fx, *s.info->doc, a, e, static_cast<size_t>(hit.col)).c_str());
      ImGui::TextDisabled("click: select %s (the Document panel's slot-effect tint shows it)",
                          fx->labels[static_cast<size_t>(e)].c_str());
      ImGui::EndTooltip();
      if (hit.clicked) ctx.vm.toggle_slot(static_cast<int>(e));
    }
  }
  const std::vector<int64_t> order = fx->ranking(a);
  double top = 0.0;
  for (int64_t e = 0; e < fx->entries(); ++e) top = std::max(top, std::fabs(fx->entry_bits(a, e)));
  const ImGuiTableFlags flags =
      ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("##slot_effects", 4, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("0000").x);
  ImGui::TableSetupColumn(fx->entry_kind.c_str(), ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("cache block 00 (positions 000..000)").x);
  ImGui::TableSetupColumn("bits saved", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("bits saved").x + 12.f);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(order.size()));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const int e = static_cast<int>(order[static_cast<size_t>(r)]);
      const double bits = fx->entry_bits(a, e);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", r + 1);
      ImGui::TableNextColumn();
      ImGui::PushID(e);
      if (ImGui::Selectable(fx->labels[static_cast<size_t>(e)].c_str(), ctx.vm.is_selected(e),
                            ImGuiSelectableFlags_SpanAllColumns))
        ctx.vm.toggle_slot(e);
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::Text("%+.3f", bits);
      ImGui::TableNextColumn();
      const viz::Rgb c = benefit_color(static_cast<float>(bits), static_cast<float>(std::max(top, 1e-9)), false);
      ui::inline_bar(top > 0.0 ? static_cast<float>(std::fabs(bits) / top) : 0.f, IM_COL32(c.r, c.g, c.b, 230),
                     ImGui::GetTextLineHeight() - 2.f);
    }
  }
  ImGui::EndTable();
}

}  // namespace mnemo::app
