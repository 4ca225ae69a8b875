// Attention: the full map of an RMT-family step over [read | tokens | write] (Transformer-XL:
// the segment's tokens over [cache | tokens]; the MTN family: its joint layers over
// [memory | chunk | write]), one layer and one head or the mean, as one texture with the
// blocks outlined and labelled; hover names the query and key and the exact weight. Below,
// the block masses (RMT: reading, writing, rewriting) of every layer as bars.
#include "app/gui/panels/panels.h"

#include "app/figures/palette.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace mnemo::app {

namespace {


std::string describe(const AttentionData& a, bool row, int i, int64_t first_token) {
  const AttnBlock* b = row ? a.row_block(i) : a.col_block(i);
  const auto& labels = row ? a.row_labels : a.col_labels;
  const auto& tokens = row ? a.row_token : a.col_token;
  const std::string label = i >= 0 && static_cast<size_t>(i) < labels.size() ? labels[static_cast<size_t>(i)] : "?";
  const int64_t tok = i >= 0 && static_cast<size_t>(i) < tokens.size() ? tokens[static_cast<size_t>(i)] : -1;
  std::string s = "[" + (b ? b->name : std::string("?")) + "]  ";
  if (tok >= 0) {
    s += "'" + label + "'  token #" + std::to_string(tok);
    if (tok >= first_token) s += ", position " + std::to_string(tok - first_token) + " in the segment";
    else s += ", before the segment";
  } else {
    s += label + (b ? "  (memory entry " + std::to_string(i - b->first) + " of " + std::to_string(b->count) + ")" : "");
  }
  return s;
}

}  // namespace

int AttentionPanel::entry_of_column(const AttentionData& a, int col, int64_t segment_len) {
  const AttnBlock* b = a.col_block(col);
  if (!b || col < b->first || col >= b->first + b->count) return -1;
  if (b->name == "read" || b->name == "previous write" || b->name == "memory") return col - b->first;
  if (b->name == "cache") {
    // Transformer-XL's cache: one entry per block of segment_len positions counted back from
    // the newest (the last block is the previous segment, the oldest may be shorter), after
    // the memory tokens of Transformer-XL + RMT (core/models/memory_entries.h).
    if (segment_len < 1) return -1;
    const int64_t c = b->count, blocks = (c + segment_len - 1) / segment_len;
    const int64_t g = blocks - 1 - (c - 1 - (col - b->first)) / segment_len;
    int tokens = 0;
    for (const auto& o : a.col_blocks)
      if (o.name == "read") tokens = o.count;
    return tokens + static_cast<int>(g);
  }
  if (b->name == "write") {
    // RMT's written memory tokens (the MTN family's write tokens are not memory entries).
    for (const auto& o : a.col_blocks)
      if ((o.name == "read" || o.name == "previous write") && o.count == b->count) return col - b->first;
  }
  return -1;
}

void AttentionPanel::draw(PanelContext& ctx) {
  image_.set_api(&ctx.textures);
  map_h_ = 0.f;  // until the map is drawn below
  drawn_.clear();
  legend_.clear();
  colorbar_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  if (!step || step->attention.empty()) {
    ImGui::TextDisabled(step ? "This model's trace has no attention maps (rmt.attn.*, trxl.attn.*, mtn.joint_attn.*)."
                             : "Step to a segment to see the attention.");
    return;
  }
  const AttentionData& a = step->attention;
  const int nl = static_cast<int>(a.layers.size());
  // Selectors clamp to what this step has.
  layer_ = std::min(std::max(0, layer_), nl - 1);
  if (head_ < -1 || head_ >= a.heads) head_ = -1;

  // The combos' previews name what they select, so they carry no labels (narrow windows).
  const std::string lname = "layer " + std::to_string(a.layers[static_cast<size_t>(layer_)]);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize(lname.c_str()).x + ImGui::GetFrameHeight() + 12.f);
  if (ImGui::BeginCombo("##layer", lname.c_str())) {
    for (int i = 0; i < nl; ++i) {
      const std::string n = "layer " + std::to_string(a.layers[static_cast<size_t>(i)]);
      if (ImGui::Selectable(n.c_str(), i == layer_)) layer_ = i;
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer");
  ImGui::SameLine();
  const std::string hname = head_ < 0 ? "mean of " + std::to_string(a.heads) + " heads" : "head " + std::to_string(head_);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("mean of 00 heads").x + ImGui::GetFrameHeight() + 12.f);
  if (ImGui::BeginCombo("##head", hname.c_str())) {
    if (ImGui::Selectable("mean over heads", head_ < 0)) head_ = -1;
    for (int h = 0; h < a.heads; ++h) {
      const std::string n = "head " + std::to_string(h);
      if (ImGui::Selectable(n.c_str(), h == head_)) head_ = h;
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("attention head, or the mean over heads");
  ImGui::SameLine();
  static const char* kScales[] = {"0..max", "0..1"};
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("0..max").x + ImGui::GetFrameHeight() + 12.f);
  ImGui::Combo("##scale", &scale_, kScales, 2);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("colour scale. 0..1 (the default): a weight's full range, so a colour means the same weight on every\n"
                      "map and step. 0..max: zero to this map's largest weight (auto, more contrast; as the exported figures).");
  char what[96];
  std::snprintf(what, sizeof what, "%s, segment %lld", a.kind.c_str(), static_cast<long long>(step->segment));
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(what).x) ImGui::NewLine();  // narrow window: own line
  ImGui::TextDisabled("%s", what);

  const bool shared = std::isfinite(ctx.shared_max);
  if (step != last_step_ || layer_ != last_layer_ || head_ != last_head_ || scale_ != last_scale_ ||
      static_cast<int>(ctx.seq_cmap) != last_cmap_ || (shared ? ctx.shared_max : -1.f) != last_shared_) {
    last_cmap_ = static_cast<int>(ctx.seq_cmap);
    last_shared_ = shared ? ctx.shared_max : -1.f;
    ++key_;
    last_step_ = step;
    last_layer_ = layer_;
    last_head_ = head_;
    last_scale_ = scale_;
    vmax_ = scale_ == 1 ? 1.f : a.map_max(layer_, head_);
    if (shared && scale_ != 1) vmax_ = ctx.shared_max;  // side by side, one colour scale (0..1 is one already)
    if (!(vmax_ > 0.f)) vmax_ = 1.f;
    char range[64];
    std::snprintf(range, sizeof range, "colour 0..%.3g%s", vmax_,
                  shared ? " (both models)" : scale_ == 1 ? "" : " (this map's largest)");
    scale_text_ = range;
  }
  // The range is always printed beside the map (the colour bar's ends say it too).
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(scale_text_.c_str()).x) ImGui::NewLine();
  ImGui::TextDisabled("%s", scale_text_.c_str());
  export_button(ctx, PanelId::kAttention);  // (after the range: the range keeps the line when both fit)
  const float* m = a.map(layer_, head_);
  image_.update(key_, m, a.rows, a.cols, 0.f, vmax_, ctx.seq_cmap);

  // Masses below the map: one row of bars per layer. A panel at least twice as wide as tall
  // (a tour stop's strip, presenter mode) puts them beside the map instead, so the bars never
  // squeeze the map to a sliver: the map keeps the panel's full height (docs/gui.md, the panels table).
  // The masses drawn: those with a value on some layer at the shown head. A mass that is n/a
  // on every layer (an MTN step writes no memory: no write rows, so no writing or rewriting)
  // has no bar and no legend entry; the "block masses" label's tooltip says why it is left out.
  for (int k = 0; k < static_cast<int>(a.mass_names.size()); ++k)
    for (int li = 0; li < nl; ++li)
      if (std::isfinite(a.mass_at(li, head_, k))) {
        drawn_.push_back(k);
        legend_.push_back(a.mass_names[static_cast<size_t>(k)]);
        break;
      }
  const int nm = static_cast<int>(drawn_.size());
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float mass_h = nm > 0 ? line * (1.6f + static_cast<float>(nl)) + 6.f : line * 1.2f;
  const ImVec2 room = ImGui::GetContentRegionAvail();
  // The bars beside the map need a layer label and, per block, its value and a bar.
  const float mass_min_w = ImGui::CalcTextSize("layer 00 ").x + static_cast<float>(std::max(1, nm)) * (ImGui::CalcTextSize("0.000").x + 24.f);
  const bool beside = nm > 0 && room.x >= 2.f * room.y && room.x >= 2.f * mass_min_w;
  ImVec2 avail = room;
  if (beside) avail.x = room.x - mass_min_w - ImGui::GetStyle().ItemSpacing.x;
  else avail.y = std::max(60.f, avail.y - mass_h);

  ui::HeatmapAxes axes;
  axes.row_labels = &a.row_labels;
  axes.col_labels = &a.col_labels;
  for (const auto& b : a.col_blocks) {
    if (b.count <= 0) continue;
    if (b.first > 0) axes.col_separators.push_back(b.first);
    axes.col_groups.push_back({b.first, b.name});
  }
  if (a.row_blocks.size() > 1)
    for (const auto& b : a.row_blocks) {
      if (b.count <= 0) continue;
      if (b.first > 0) axes.row_separators.push_back(b.first);
      axes.row_groups.push_back({b.first, b.name});
    }
  axes.colorbar = &colorbar_;
  axes.vmin = 0.f;
  axes.vmax = vmax_;
  axes.cmap = ctx.seq_cmap;
  axes.colorbar_label = "weight";
  // A square map when the window allows (RMT's rows and columns are the same sequence).
  ImVec2 size = avail;
  if (a.rows == a.cols) {
    const float extra_x = ui::colorbar_width() + ImGui::GetFontSize() * 9.f;
    const float side = std::min(avail.x - extra_x, avail.y - line * 2.f);
    if (side > 80.f) size.x = std::min(avail.x, side + extra_x);
  } else if (beside) {
    size.x = std::max(avail.x * 0.5f, room.x - std::max(mass_min_w, room.x * 0.35f));  // the bars get about a third
  }
  auto hit = ui::draw_heatmap("##attention", image_, size, axes);
  map_h_ = hit.plot_max.y - hit.plot_min.y;
  plot_min_ = hit.plot_min;
  plot_max_ = hit.plot_max;
  // A click on a memory entry's column selects it in every panel (its provenance tint, its
  // slot effect), as a click on a slot does in the Memformer panels.
  const int hovered_entry = hit.hovered ? entry_of_column(a, hit.col, step->segment_len) : -1;
  // Cache blocks are entries once the Slot effects panel has computed them (until then the
  // selection has nothing to show them by).
  const bool selectable = hovered_entry >= 0 && hovered_entry < ctx.vm.slots();
  const bool cache_col = hovered_entry >= 0 && a.col_block(hit.col) && a.col_block(hit.col)->name == "cache";
  if (hit.clicked && selectable) ctx.vm.toggle_slot(hovered_entry);
  if (hit.hovered && m) {
    // Outline the hovered cell (visible even when cells are thinner than a pixel).
    const float cw = (hit.plot_max.x - hit.plot_min.x) / static_cast<float>(a.cols);
    const float rh = (hit.plot_max.y - hit.plot_min.y) / static_cast<float>(a.rows);
    const ImVec2 c0(hit.plot_min.x + cw * static_cast<float>(hit.col), hit.plot_min.y + rh * static_cast<float>(hit.row));
    ImGui::GetWindowDrawList()->AddRect(ImVec2(c0.x - 1.f, c0.y - 1.f), ImVec2(c0.x + std::max(cw, 2.f) + 1.f, c0.y + std::max(rh, 2.f) + 1.f),
                                        IM_COL32(255, 214, 10, 255), 0.f, 0, 1.5f);
    const float v = m[static_cast<size_t>(hit.row) * static_cast<size_t>(a.cols) + static_cast<size_t>(hit.col)];
    ImGui::BeginTooltip();
    ImGui::Text("query %s", describe(a, true, hit.row, step->first_token).c_str());
    ImGui::Text("key   %s", describe(a, false, hit.col, step->first_token).c_str());
    ImGui::Text("weight %.6f  (%s, %s)", v, lname.c_str(), hname.c_str());
    if (cache_col) {
      const int oldest = entry_of_column(a, a.col_block(hit.col)->first, step->segment_len);
      ImGui::Text("in cache block %d (memory entry %d)", hovered_entry - oldest, hovered_entry);
    }
    if (hovered_entry >= 0 && !selectable && cache_col) {
      ImGui::TextDisabled("compute the slot effects (Slot effects panel) to select this cache block");
    } else if (selectable) {
      if (ctx.vm.is_selected(hovered_entry)) ImGui::TextDisabled("click: clear the selection");
      else ImGui::TextDisabled("click: select memory entry %d in every panel", hovered_entry);
    }
    ImGui::EndTooltip();
  }

  // Block masses.
  if (beside) {
    ImGui::SameLine();
    ImGui::BeginGroup();
  }
  draw_masses(a, nm, line);
  if (beside) ImGui::EndGroup();
}

void AttentionPanel::draw_masses(const AttentionData& a, int nm, float line) {
  const int nl = static_cast<int>(a.layers.size());
  const std::string hname = head_ < 0 ? "mean of " + std::to_string(a.heads) + " heads" : "head " + std::to_string(head_);
  // The masses left out (n/a on every layer), named once in the label's tooltip.
  std::string left_out;
  for (int k = 0; k < static_cast<int>(a.mass_names.size()); ++k)
    if (std::find(drawn_.begin(), drawn_.end(), k) == drawn_.end())
      left_out += (left_out.empty() ? "" : ", ") + a.mass_names[static_cast<size_t>(k)];
  if (nm == 0) {
    ImGui::TextDisabled(a.kind == "Transformer" || a.kind == "MTN no memory"
                            ? "No memory: every token attends within its segment only."
                            : "No block masses for this map.");
    if (!left_out.empty() && ImGui::IsItemHovered())
      ImGui::SetTooltip("%s: n/a on every layer, this map has no rows of those blocks", left_out.c_str());
    return;
  }
  ImGui::TextUnformatted("block masses");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s, %s: a query row's attention mass on a block of keys, averaged over the rows of its block%s%s%s",
                      a.traced_mass ? "traced (rmt.block_mass)" : "computed from the maps", hname.c_str(),
                      left_out.empty() ? "" : "\nnot drawn: ", left_out.c_str(),
                      left_out.empty() ? "" : ", n/a on every layer: this map has no rows of that block (a step that writes "
                                              "no memory has no write rows)");
  for (int d = 0; d < nm; ++d) {
    const int k = drawn_[static_cast<size_t>(d)];
    const char* name = a.mass_names[static_cast<size_t>(k)].c_str();
    const float item_w = line * 0.6f + 3.f + ImGui::CalcTextSize(name).x + ImGui::GetStyle().ItemSpacing.x;
    ImGui::SameLine();
    if (ImGui::GetContentRegionAvail().x < item_w) ImGui::NewLine();
    ImGui::ColorButton(("##mc" + std::to_string(k)).c_str(), ImGui::ColorConvertU32ToFloat4(ui::im_color(palette::mass(static_cast<int>(k)))),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(line * 0.6f, line * 0.6f));
    ImGui::SameLine(0.f, 3.f);
    ImGui::TextUnformatted(name);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", a.mass_help[static_cast<size_t>(k)].c_str());
  }
  // One line per layer: label, then nm bars sharing the width, each with its value.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float label_w = ImGui::CalcTextSize("layer 00 ").x;
  for (int li = 0; li < nl; ++li) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::max(30.f, ImGui::GetContentRegionAvail().x - label_w);
    const float h = ImGui::GetTextLineHeight();
    char buf[48];
    std::snprintf(buf, sizeof buf, "layer %d", a.layers[static_cast<size_t>(li)]);
    dl->AddText(p, li == layer_ ? IM_COL32(255, 214, 10, 255) : ImGui::GetColorU32(ImGuiCol_Text), buf);
    const float bw = w / static_cast<float>(nm);
    for (int d = 0; d < nm; ++d) {
      const int k = drawn_[static_cast<size_t>(d)];  // colours follow the mass, not its place
      const float v = a.mass_at(li, head_, k);
      const float x0 = p.x + label_w + bw * static_cast<float>(d), x1 = x0 + bw - 6.f;
      dl->AddRectFilled(ImVec2(x0, p.y), ImVec2(x1, p.y + h), IM_COL32(255, 255, 255, 18));
      if (std::isfinite(v)) {
        dl->AddRectFilled(ImVec2(x0, p.y), ImVec2(x0 + (x1 - x0) * std::min(1.f, std::max(0.f, v)), p.y + h), ui::im_color(palette::mass(static_cast<int>(k))));
        std::snprintf(buf, sizeof buf, "%.3f", v);
      } else {
        std::snprintf(buf, sizeof buf, "n/a");
      }
      // White on a dark edge: readable on the light (rewriting) bar as on the dark track.
      dl->AddText(ImVec2(x0 + 5.f, p.y + 1.f), IM_COL32(0, 0, 0, 255), buf);
      dl->AddText(ImVec2(x0 + 4.f, p.y), IM_COL32(255, 255, 255, 255), buf);
      if (ImGui::IsMouseHoveringRect(ImVec2(x0, p.y), ImVec2(x1, p.y + h)) && ImGui::IsWindowHovered()) {
        if (std::isfinite(v))
          ImGui::SetTooltip("layer %d, %s = %.6f\n%s\nscale: 0..1 (a row's attention sums to 1)", a.layers[static_cast<size_t>(li)],
                            a.mass_names[static_cast<size_t>(k)].c_str(), v, a.mass_help[static_cast<size_t>(k)].c_str());
        else  // the block has no rows on this layer (drawn: another layer has them)
          ImGui::SetTooltip("layer %d, %s: n/a, this map has no rows of that block (a model step that writes no memory "
                            "has no write rows)\n%s",
                            a.layers[static_cast<size_t>(li)], a.mass_names[static_cast<size_t>(k)].c_str(),
                            a.mass_help[static_cast<size_t>(k)].c_str());
      }
    }
    ImGui::Dummy(ImVec2(w + label_w, h + 2.f));
    if (ImGui::IsItemClicked()) layer_ = li;
  }
}

}  // namespace mnemo::app
