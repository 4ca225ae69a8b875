// Two models side by side in the shell (docs/gui.md#side-by-side): every panel window holds
// column A, column B and — for the writer attention and the attention maps — A − B on a
// diverging scale. Selection, head and layer follow A; stepping goes to both (the caller's
// LockstepController); "same colour scale" gives both columns 0..the larger maximum.
#include "app/gui/shell/shell.h"

#include "app/figures/compare.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

bool Shell::take_compare_request(std::string* model) {
  if (!compare_requested_) return false;
  compare_requested_ = false;
  *model = compare_model_;
  return true;
}

void Shell::draw_compare(PanelId id, PanelContext& ctx_a, Controller& control) {
  const PublishedView& a = ctx_a.session;
  const PublishedView& b = *compare_;
  // One selection: a click in B selects there and in A; A's selection shows in B.
  if (side_b_.vm.selection_version() != side_b_.seen_selection) vm_.select_slot(side_b_.vm.selected_slot());
  side_b_.vm.select_slot(vm_.selected_slot());
  side_b_.seen_selection = side_b_.vm.selection_version();
  if (b.step) side_b_.vm.set_head(vm_.head(), b.step->heads);
  side_b_.vm.set_thresholds(vm_.thresholds());
  side_b_.panel<AttentionPanel>(PanelId::kAttention).select(attention().layer_index(), attention().head());

  const bool diff = show_diff_ && (id == PanelId::kWriterAttention || id == PanelId::kAttention);
  float shared = NAN;
  if (same_scale_ && a.step && b.step) {
    if (id == PanelId::kWriterAttention && a.step->has_writer() && b.step->has_writer()) {
      auto mx = [&](const StepData& st) {
        const size_t k = vm_.head() < 0 || vm_.head() >= st.heads ? 0 : static_cast<size_t>(vm_.head()) + 1;
        return k < st.block_max.size() ? st.block_max[k] : NAN;
      };
      shared = shared_max(mx(*a.step), mx(*b.step));
    } else if (id == PanelId::kAttention && !a.step->attention.empty() && !b.step->attention.empty()) {
      shared = shared_max(a.step->attention.map_max(attention().layer_index(), attention().head()),
                          b.step->attention.map_max(attention().layer_index(), attention().head()));
    }
  }
  const int n = diff ? 3 : 2;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float w = std::max(40.f, (ImGui::GetContentRegionAvail().x - gap * static_cast<float>(n - 1)) / static_cast<float>(n));
  PanelContext ctx_b{b, side_b_.vm, *textures_, control, transport_, requests_, fonts_.mono, true};
  ctx_b.small_mono = fonts_.small_mono;
  ctx_b.seq_cmap = ctx_a.seq_cmap;
  ctx_b.highlight_token = ctx_a.highlight_token;
  ctx_a.shared_max = ctx_b.shared_max = shared;
  auto column = [&](const char* child, const std::string& label, PanelContext& ctx, bool side_b) {
    if (ImGui::BeginChild(child, ImVec2(w, 0), false, ImGuiWindowFlags_NoScrollbar)) {
      ImGui::TextColored(side_b ? ImVec4(1.f, 0.6f, 0.3f, 1.f) : ImVec4(0.45f, 0.75f, 1.f, 1.f), "%s", label.c_str());
      if (!panel_applies(id, ctx.session)) {
        std::string why;
        panel_applies(id, ctx.session, &why);
        ImGui::TextDisabled("%s", why.c_str());
      } else {
        (side_b ? side_b_.panels : panels_)[static_cast<size_t>(id)]->draw(ctx);
      }
    }
    ImGui::EndChild();
  };
  if (id == PanelId::kDocument) side_b_.panel<DocumentPanel>(id).set_tint(document_panel().tint());
  column("##side_a", "A: " + label_a_, ctx_a, false);
  ImGui::SameLine(0.f, gap);
  column("##side_b", "B: " + label_b_, ctx_b, true);
  if (diff) {
    ImGui::SameLine(0.f, gap);
    if (ImGui::BeginChild("##side_diff", ImVec2(w, 0), false, ImGuiWindowFlags_NoScrollbar)) draw_difference(id, a, b);
    ImGui::EndChild();
  }
}

void Shell::draw_difference(PanelId id, const PublishedView& a, const PublishedView& b) {
  diff_image_.set_api(textures_);
  diff_colorbar_.set_api(textures_);
  ImGui::TextColored(ImVec4(0.9f, 0.9f, 0.9f, 1.f), "A - B");
  if (!a.step || !b.step) {
    ImGui::TextDisabled("Step both models to see their difference.");
    return;
  }
  const int head = id == PanelId::kWriterAttention ? vm_.head() : attention().head();
  const int layer = attention().layer_index();
  DiffMap& d = diff_;  // rebuilt when its inputs change
  if (a.step != diff_a_ || b.step != diff_b_ || head != diff_head_ || layer != diff_layer_ || id != diff_panel_) {
    diff_a_ = a.step;
    diff_b_ = b.step;
    diff_head_ = head;
    diff_layer_ = layer;
    diff_panel_ = id;
    d = id == PanelId::kWriterAttention ? writer_difference(*a.step, *b.step, head)
                                        : attention_difference(a.step->attention, b.step->attention, layer, head);
    ++diff_key_;
  }
  if (!d.ok) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("No difference: %s. A - B needs two maps of one kind and shape (e.g. a model and its ablation).",
                       d.why.c_str());
    ImGui::PopStyleColor();
    return;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("max |A - B| = %.4f  (blue: B larger, red: A larger)", d.absmax);
  const float m = d.absmax > 0.f ? d.absmax : 1e-6f;
  diff_image_.update(diff_key_, d.values.data(), d.rows, d.cols, -m, m, viz::Colormap::Diverging);
  ui::HeatmapAxes axes;
  axes.col_labels = &d.col_labels;
  axes.row_labels = &d.row_labels;
  axes.colorbar = &diff_colorbar_;
  axes.cmap = viz::Colormap::Diverging;
  axes.vmin = -m;
  axes.vmax = m;
  axes.colorbar_label = "A - B";
  axes.highlight_row = id == PanelId::kWriterAttention ? vm_.selected_slot() : -1;
  auto hit = ui::draw_heatmap("##diff", diff_image_, ImGui::GetContentRegionAvail(), axes);
  if (hit.hovered) {
    const size_t i = static_cast<size_t>(hit.row) * static_cast<size_t>(d.cols) + static_cast<size_t>(hit.col);
    ImGui::BeginTooltip();
    ImGui::Text("row %s, column %s", d.row_labels.empty() ? std::to_string(hit.row).c_str() : d.row_labels[static_cast<size_t>(hit.row)].c_str(),
                d.col_labels[static_cast<size_t>(hit.col)].c_str());
    ImGui::Text("A - B = %+.6f", d.values[i]);
    ImGui::EndTooltip();
    if (hit.clicked && id == PanelId::kWriterAttention) vm_.toggle_slot(hit.row);
  }
}

}  // namespace mnemo::app
