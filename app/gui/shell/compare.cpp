// Two models side by side in the shell (docs/gui.md#side-by-side): a panel applies when it
// applies to A or to B; its window holds column A and column B (and, for the writer attention
// and the attention maps of one kind and shape, A − B on a diverging scale), or — when only
// one side's family has it — one short line for the side without it and the other side at
// full width, so a Memformer beside an RMT shows both memories. The Document columns carry
// each side's loss and memory benefit and scroll together; the attention panels share one
// colour scale by default (0..the larger maximum, printed above the columns). Selection,
// head and layer follow A where A has the panel; stepping goes to both (the caller's
// LockstepController).
#include "app/gui/shell/shell.h"

#include "app/figures/compare.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

namespace {
const ImVec4 kColourA(0.45f, 0.75f, 1.f, 1.f), kColourB(1.f, 0.6f, 0.3f, 1.f);

std::string model_name(const PublishedView& v) { return v.info ? v.info->cfg.model : "this model"; }

// The one line a column shows for a panel its model lacks (the other side draws it).
std::string absent_line(PanelId id, const PublishedView& v) {
  const std::string m = model_name(v);
  if (!v.info) return "no document open yet";
  switch (id) {
    case PanelId::kWriterAttention:
    case PanelId::kTimeline:
    case PanelId::kSlotTypes:
    case PanelId::kForgetting:
    case PanelId::kMemory:
      return m + " has no Memformer slots: its memory is in " +
             (panel_applies(PanelId::kMtnMemory, v) ? "MTN memory" : panel_applies(PanelId::kAttention, v) ? "Attention" : "no panel");
    case PanelId::kAttention: return m + " is a Memformer: its attention over memory is in Writer attention";
    case PanelId::kMtnMemory: return m + " keeps no document tokens (not an MTN model)";
    case PanelId::kHashBuckets: return m + " has dense projections (no hash tables)";
    default: {
      std::string why;
      panel_applies(id, v, &why);
      return why;
    }
  }
}
}  // namespace

bool Shell::take_compare_request(std::string* model) {
  if (!compare_requested_) return false;
  compare_requested_ = false;
  *model = compare_model_;
  return true;
}

bool Shell::applies_here(PanelId id, const PublishedView& s) const {
  if (panel_applies(id, s)) return true;
  return compare_ && compare_->info && panel_def(id).per_model && panel_applies(id, *compare_);
}

void Shell::draw_compare(PanelId id, PanelContext& ctx_a, Controller& control) {
  const PublishedView& a = ctx_a.view;
  const PublishedView& b = *compare_;
  const bool in_a = panel_applies(id, a), in_b = b.info != nullptr && panel_applies(id, b);
  // One selection: a click in B selects there and in A; A's selection shows in B.
  if (side_b_.vm.selection_version() != side_b_.seen_selection) vm_.select_slot(side_b_.vm.selected_slot());
  side_b_.vm.select_slot(vm_.selected_slot());
  side_b_.seen_selection = side_b_.vm.selection_version();
  side_b_.vm.set_thresholds(vm_.thresholds());
  // Head and layer follow A where A has the panel; a side alone keeps its own choice.
  const bool a_writer = panel_applies(PanelId::kWriterAttention, a), a_attn = a.info && panel_applies(PanelId::kAttention, a);
  if (b.step && a_writer) side_b_.vm.set_head(vm_.head(), b.step->memformer.heads);
  AttentionPanel& attn_b = side_b_.panel<AttentionPanel>(PanelId::kAttention);
  if (a_attn) attn_b.select(attention().layer_index(), attention().head());
  // Both sides on the same scale choice (0..max, 0..1, ...): the side changed last sets it.
  auto sync_scale = [&](auto& pa, auto& pb, int& synced) {
    if (pb.scale() != synced && pa.scale() == synced) pa.set_scale(pb.scale());
    else pb.set_scale(pa.scale());
    synced = pa.scale();
  };
  if (a_writer) sync_scale(panel<WriterAttentionPanel>(PanelId::kWriterAttention),
                           side_b_.panel<WriterAttentionPanel>(PanelId::kWriterAttention), synced_scale_[0]);
  if (a_attn) sync_scale(attention(), attn_b, synced_scale_[1]);

  const bool attn_panel = id == PanelId::kWriterAttention || id == PanelId::kAttention;
  float shared = NAN;
  if (attn_panel && a.step && b.step) {
    // The shared scale spans both sides' shown attention maps, whichever panel each draws them
    // in (a Memformer's writer attention beside an RMT's attention map).
    const float ma = shown_attention_max(*a.step, a_writer, vm_.head(), attention().layer_index(), attention().head());
    const float mb = shown_attention_max(*b.step, panel_applies(PanelId::kWriterAttention, b), side_b_.vm.head(),
                                         attn_b.layer_index(), attn_b.head());
    if (same_scale_) shared = shared_max(ma, mb);
  }
  compare_shared_max_ = shared;
  const bool diff = show_diff_ && attn_panel && in_a && in_b;
  PanelContext ctx_b{b, side_b_.vm, *textures_, control, transport_, requests_, fonts_.mono, true};
  ctx_b.small_mono = fonts_.small_mono;
  ctx_b.seq_cmap = ctx_a.seq_cmap;
  ctx_b.highlight_token = ctx_a.highlight_token;
  ctx_a.shared_max = ctx_b.shared_max = shared;
  ctx_a.compact = ctx_b.compact = true;
  if (id == PanelId::kDocument) {
    DocumentPanel& doc_b = side_b_.panel<DocumentPanel>(id);
    doc_b.set_tint(document_panel().tint());
    document_panel().link_scroll(&doc_scroll_, 0);
    doc_b.link_scroll(&doc_scroll_, 1);
    // Both texts start at the lower of the two headers' ends (last frame's): a notice on one
    // side only ("changed on disk", "Unlike the training text") no longer puts that side's
    // rows a line below the other's.
    const float text_y = std::max(document_panel().header_end(), doc_b.header_end());
    document_panel().align_text_at(text_y);
    doc_b.align_text_at(text_y);
  }

  if (attn_panel && a.step && b.step) {
    // The colour scale, printed, with its switch.
    ImGui::Checkbox("one colour scale", &same_scale_);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("On: both sides' attention maps on 0..the larger maximum of the two, so equal colours mean equal\n"
                        "weights (also between a Memformer's writer attention and an RMT's attention map).\n"
                        "Off: each side on its own scale (its panel's scale choice).");
    ImGui::SameLine();
    const float va = id == PanelId::kWriterAttention ? panel<WriterAttentionPanel>(id).vmax() : attention().vmax();
    const float vb = id == PanelId::kWriterAttention ? side_b_.panel<WriterAttentionPanel>(id).vmax() : attn_b.vmax();
    // A panel on its fixed scale (0..1, the default) ignores the shared maximum: print what is drawn.
    const bool b_writer = panel_applies(PanelId::kWriterAttention, b);
    const bool fixed_a = a_writer ? panel<WriterAttentionPanel>(PanelId::kWriterAttention).scale() == 2 : attention().scale() == 1;
    const bool fixed_b =
        b_writer ? side_b_.panel<WriterAttentionPanel>(PanelId::kWriterAttention).scale() == 2 : attn_b.scale() == 1;
    if (std::isfinite(shared) && fixed_a && fixed_b)
      ImGui::TextDisabled("A and B: 0..1 (a weight's full range)");
    else if (std::isfinite(shared) && !fixed_a && !fixed_b)
      ImGui::TextDisabled("A and B: 0..%.4g (the larger maximum of both sides' maps)", shared);
    else if (std::isfinite(shared))
      ImGui::TextDisabled("A 0..%.4g, B 0..%.4g (0..1 is a fixed scale; the other side's is the larger maximum)",
                          fixed_a ? 1.0 : static_cast<double>(shared), fixed_b ? 1.0 : static_cast<double>(shared));
    else if (in_a && in_b)
      ImGui::TextDisabled("per side: A 0..%.4g, B 0..%.4g", va, vb);
    else
      ImGui::TextDisabled("per side: %s 0..%.4g", in_a ? "A" : "B", in_a ? va : vb);
  }

  auto label = [&](bool side_b) {
    ImGui::TextColored(side_b ? kColourB : kColourA, "%s", ((side_b ? "B: " : "A: ") + (side_b ? label_b_ : label_a_)).c_str());
    if (id == PanelId::kDocument) {
      // One line (the whole on hover): the column's rows are the text's.
      const PublishedView& v = side_b ? b : a;
      ui::text_one_line(v.step ? side_summary(*v.step).text() : "not stepped yet", ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    }
  };
  auto column = [&](const char* child, float w, PanelContext& ctx, bool side_b, bool labelled = true) {
    if (ImGui::BeginChild(child, ImVec2(w, 0), false, ImGuiWindowFlags_NoScrollbar)) {
      if (labelled) label(side_b);
      const bool applies = side_b ? in_b : in_a;
      if (!applies) {
        std::string why;
        panel_applies(id, ctx.view, &why);
        ImGui::TextDisabled("%s", why.c_str());
      } else {
        (side_b ? side_b_.panels : panels_)[static_cast<size_t>(id)]->draw(ctx);
      }
    }
    ImGui::EndChild();
  };
  if (in_a != in_b) {
    // One side's family has this panel: the other says so, this one draws at full width; both
    // on one line (the map keeps the rest): the name of the side that has it, then the other's
    // with why not (shortened to the line; the whole on hover).
    const bool side_b = in_b;
    for (int k = 0; k < 2; ++k) {
      const bool is_b = k == 0 ? side_b : !side_b;
      if (k == 1) ImGui::SameLine(0.f, 2.f * ImGui::GetStyle().ItemSpacing.x);
      ImGui::TextColored(is_b ? kColourB : kColourA, "%s", (is_b ? "B: " + label_b_ : "A: " + label_a_).c_str());
      if (is_b == side_b) continue;
      ImGui::SameLine();
      ImGui::BeginGroup();
      ui::text_one_line(absent_line(id, is_b ? b : a), ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::EndGroup();
    }
    column(side_b ? "##side_b" : "##side_a", 0.f, side_b ? ctx_b : ctx_a, side_b, false);
    return;
  }
  const int n = diff ? 3 : 2;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float avail = ImGui::GetContentRegionAvail().x;
  float w = std::max(40.f, (avail - gap * static_cast<float>(n - 1)) / static_cast<float>(n));
  float w_diff = w;
  if (diff && !update_difference(id, a, b)) {
    // No A - B map (two maps of different kinds or shapes): the column holds only why, so it
    // takes a narrow strip and the two maps keep the width.
    w_diff = std::min(w, std::max(ImGui::GetFontSize() * 8.f, avail * 0.18f));
    w = std::max(40.f, (avail - 2.f * gap - w_diff) / 2.f);
  }
  column("##side_a", w, ctx_a, false);
  ImGui::SameLine(0.f, gap);
  column("##side_b", w, ctx_b, true);
  if (diff) {
    ImGui::SameLine(0.f, gap);
    if (ImGui::BeginChild("##side_diff", ImVec2(w_diff, 0), false, ImGuiWindowFlags_NoScrollbar)) draw_difference(id, a, b);
    ImGui::EndChild();
  }
}

// The A - B map of the panel's maps (rebuilt when its inputs change): false when there is none
// (a side not stepped yet counts as drawable: the column says to step both).
bool Shell::update_difference(PanelId id, const PublishedView& a, const PublishedView& b) {
  if (!a.step || !b.step) return true;
  const int head = id == PanelId::kWriterAttention ? vm_.head() : attention().head();
  const int layer = attention().layer_index();
  if (a.step != diff_a_ || b.step != diff_b_ || head != diff_head_ || layer != diff_layer_ || id != diff_panel_) {
    diff_a_ = a.step;
    diff_b_ = b.step;
    diff_head_ = head;
    diff_layer_ = layer;
    diff_panel_ = id;
    diff_ = id == PanelId::kWriterAttention ? writer_difference(*a.step, *b.step, head)
                                            : attention_difference(a.step->attention, b.step->attention, layer, head);
    ++diff_key_;
  }
  return diff_.ok;
}

void Shell::draw_difference(PanelId id, const PublishedView& a, const PublishedView& b) {
  diff_image_.set_api(textures_);
  diff_colorbar_.set_api(textures_);
  ImGui::TextColored(ImVec4(0.9f, 0.9f, 0.9f, 1.f), "A - B");
  if (!a.step || !b.step) {
    ImGui::TextDisabled("Step both models to see their difference.");
    return;
  }
  update_difference(id, a, b);
  const DiffMap& d = diff_;
  if (!d.ok) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("No A - B map: %s. A - B needs two maps of one kind and shape (e.g. a model and its ablation).",
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
