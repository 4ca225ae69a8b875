// Writer attention: slots x [self | segment tokens | cls] of the shown step, one head or the
// mean, as one texture; hover names the slot, the token and the exact weight.
#include "app/gui/panels/panels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace mnemo::app {

void WriterAttentionPanel::draw(PanelContext& ctx) {
  image_.set_api(&ctx.textures);
  map_h_ = 0.f;  // until the map is drawn below
  colorbar_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  if (!step || !step->memformer.has_writer()) {
    ImGui::TextDisabled(step ? "This model's trace has no writer attention." : "Step to a segment to see the writer attention.");
    return;
  }
  // Head selector: the mean or one head.
  int head = ctx.vm.head();
  if (head >= step->memformer.heads) {
    ctx.vm.set_head(-1, step->memformer.heads);
    head = -1;
  }
  const std::string current = head < 0 ? "mean of " + std::to_string(step->memformer.heads) + " heads" : "head " + std::to_string(head);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.f);
  if (ImGui::BeginCombo("head", current.c_str())) {
    if (ImGui::Selectable("mean over heads", head < 0)) ctx.vm.set_head(-1, step->memformer.heads);
    for (int h = 0; h < step->memformer.heads; ++h) {
      const std::string name = "head " + std::to_string(h);
      if (ImGui::Selectable(name.c_str(), h == head)) ctx.vm.set_head(h, step->memformer.heads);
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  static const char* kScales[] = {"0..max", "min..max", "0..1"};
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.f);
  ImGui::Combo("scale", &scale_, kScales, 3);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Colour scale. 0..1 (the default): the full range of an attention weight, so a colour means\n"
                      "the same weight on every map and step.\n"
                      "0..max: zero to this map's largest weight (auto; as the exported figures).\n"
                      "min..max: the map's own range, for contrast when the writer is near-uniform (untrained).");
  ImGui::SameLine();
  ImGui::TextDisabled("segment %lld", static_cast<long long>(step->segment));
  if (ctx.view.info && ctx.view.info->checkpoint.empty() && !ctx.preview) {
    ImGui::SameLine();
    ImGui::TextDisabled("(random weights)");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("An untrained writer attends almost uniformly, so every slot is mostly overwritten.\n"
                        "Load a trained checkpoint (Controls) to see slots that retain their content.");
  }
  head = ctx.vm.head();

  const bool shared = std::isfinite(ctx.shared_max);
  if (step != last_step_ || head != last_head_ || scale_ != last_scale_ || static_cast<int>(ctx.seq_cmap) != last_cmap_ ||
      (shared ? ctx.shared_max : -1.f) != last_shared_) {
    ++key_;
    last_step_ = step;
    last_head_ = head;
    last_scale_ = scale_;
    last_cmap_ = static_cast<int>(ctx.seq_cmap);
    last_shared_ = shared ? ctx.shared_max : -1.f;
    const size_t b = head < 0 || head >= step->memformer.heads ? 0 : static_cast<size_t>(head) + 1;
    const float lo = b < step->memformer.block_min.size() ? step->memformer.block_min[b] : 0.f;
    const float hi = b < step->memformer.block_max.size() ? step->memformer.block_max[b] : 1.f;
    vmin_ = scale_ == 1 ? lo : 0.f;
    vmax_ = scale_ == 2 ? 1.f : hi;
    if (shared && scale_ != 2) {
      // Side by side, one colour scale: 0..the larger maximum of the two models (0..1 is one already).
      vmin_ = 0.f;
      vmax_ = ctx.shared_max;
    }
    if (!(vmax_ > vmin_)) vmax_ = vmin_ + 1e-6f;
    char range[80];
    std::snprintf(range, sizeof range, "colour %.3g..%.3g%s", vmin_, vmax_,
                  shared ? " (both models)" : scale_ == 0 ? " (this map's largest)" : scale_ == 1 ? " (this map's range)" : "");
    scale_text_ = range;
  }
  // The range is always printed beside the map (the colour bar's ends say it too).
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(scale_text_.c_str()).x) ImGui::NewLine();
  ImGui::TextDisabled("%s", scale_text_.c_str());
  export_button(ctx, PanelId::kWriterAttention);  // after the range, as the Attention panel: the range keeps the line when both fit
  image_.update(key_, step->memformer.writer_block(head), step->memformer.slots, step->memformer.cols, vmin_, vmax_, ctx.seq_cmap);

  ui::HeatmapAxes axes;
  axes.col_labels = &step->memformer.col_labels;
  axes.col_separators = {1};
  axes.col_groups = {{0, "self"}, {1, "segment tokens"}};
  if (step->memformer.n_cls > 0) {
    axes.col_separators.push_back(1 + static_cast<int>(step->length));
    axes.col_groups.push_back({1 + static_cast<int>(step->length), "cls"});
  }
  axes.highlight_row = ctx.vm.selected_slot();
  axes.colorbar = &colorbar_;
  axes.cmap = ctx.seq_cmap;
  // The first and last token always keep their labels (the middle ones thin out).
  if (step->length > 0) axes.always_label_cols = {1, static_cast<int>(step->length)};
  axes.vmin = vmin_;
  axes.vmax = vmax_;
  axes.colorbar_label = "weight";
  axes.x_title = "";
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  auto hit = ui::draw_heatmap("##writer", image_, avail, axes);
  map_h_ = hit.plot_max.y - hit.plot_min.y;
  if (hit.hovered) {
    const size_t i = static_cast<size_t>(hit.row) * static_cast<size_t>(step->memformer.cols) + static_cast<size_t>(hit.col);
    const float v = step->memformer.writer_block(head)[i];
    ImGui::BeginTooltip();
    ImGui::Text("slot %d", hit.row);
    if (hit.col == 0) {
      ImGui::Text("column: self (the slot's own previous content)");
    } else if (hit.col <= step->length) {
      const long long t = static_cast<long long>(step->first_token + hit.col - 1);
      ImGui::Text("token '%s'  (#%lld, position %d in the segment)", step->memformer.col_labels[static_cast<size_t>(hit.col)].c_str(), t,
                  hit.col - 1);
    } else {
      ImGui::Text("column: %s (classification token)", step->memformer.col_labels[static_cast<size_t>(hit.col)].c_str());
    }
    ImGui::Text("weight %.6f  (%s)", v, head < 0 ? "mean over heads" : ("head " + std::to_string(head)).c_str());
    slot_tooltip_lines(ctx, hit.row);
    ImGui::TextDisabled("click: select slot %d in every panel", hit.row);
    ImGui::EndTooltip();
    if (hit.clicked) ctx.vm.toggle_slot(hit.row);
  }
}

}  // namespace mnemo::app
