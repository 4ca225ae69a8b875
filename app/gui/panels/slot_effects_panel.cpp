#include "app/gui/panels/slot_effects_panel.h"

#include "app/figures/benefit.h"
#include "app/figures/slot_effects.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

const SlotEffects* SlotEffectsPanel::shown(const PublishedView& s) {
  if (!s.slot_effects || !s.step || s.slot_effects->segment != s.step->segment || s.slot_effects->empty()) return nullptr;
  return s.slot_effects.get();
}

void SlotEffectsPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.session;
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
                  "Click a row: select the entry (the Document panel's slot-effect tint shows it token by token).");
  char line[256];
  std::snprintf(line, sizeof line,
                "segment %lld, %zu predicted tokens: every entry at once %+.2f bits, the single entries' sum %+.2f "
                "(they need not add up)",
                static_cast<long long>(fx->segment), fx->tokens.size(), fx->all_entries_bits(a), fx->sum_of_entries(a));
  ui::text_wrapped_at_spaces(line);
  if (!fx->entries_removed) ImGui::TextDisabled("segment 0 starts from the initial memory: nothing written to remove");
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
