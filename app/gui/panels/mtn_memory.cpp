// MTN memory: the Memory Transformer Network's memory after the step as the document's own
// words. Top: keep_m_max's candidates (the previous memory, then the chunk) as an importance
// strip, the kept ones outlined. Left: the kept entries in memory order (decreasing
// importance) with the token in context, importance and age (chunks survived). Right: the
// document from the oldest kept token to the end of the chunk, kept tokens on their age
// colour, the chunk on a grey band. Hover anything for exact values; click an entry or a
// kept token to mark it in both lists.
#include "app/gui/panels/panels.h"

#include "app/figures/memformer.h"
#include "families/mtn/view/figures.h"
#include "viz/colormap.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace mnemo::app {

namespace {

// The CLI document figure's age colours: viridis over 0..max_age, blended with white so
// dark text stays legible.
ImU32 age_color(int64_t age, int64_t max_age, bool pale) {
  const float t = max_age > 0 ? static_cast<float>(age) / static_cast<float>(max_age) : 0.f;
  viz::Rgb c = viz::sample(viz::Colormap::Viridis, t);
  if (pale) {
    auto mix = [](uint8_t v) { return static_cast<uint8_t>(0.45f * v + 0.55f * 255.f); };
    c = viz::Rgb{mix(c.r), mix(c.g), mix(c.b)};
  }
  return IM_COL32(c.r, c.g, c.b, 255);
}

// What a token shows in the running text: itself, blank for a space (a kept space shows ␣),
// and "\n" ends the line (a kept newline shows ↵ first).
std::string shown_text(const Document& doc, int64_t t, bool kept, bool* newline) {
  const auto& [b, e] = doc.offset(t);
  *newline = false;
  if (e - b == 1) {
    const char c = doc.bytes[static_cast<size_t>(b)];
    if (c == ' ') return kept ? "\xE2\x90\xA3" : " ";
    if (c == '\n') {
      *newline = true;
      return kept ? "\xE2\x86\xB5" : "";
    }
  }
  return token_text(doc, t);
}

// When token t is one byte that starts a UTF-8 character whose continuation bytes are the
// next tokens (one byte each, all before `end`), the number of tokens of that character; else 1.
int utf8_joined_len(const Document& doc, int64_t t, int64_t end) {
  const auto& [b, e] = doc.offset(t);
  if (e - b != 1) return 1;
  const unsigned char c = static_cast<unsigned char>(doc.bytes[static_cast<size_t>(b)]);
  const int need = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
  if (need == 1 || (c >= 0xF8)) return 1;
  if (t + need > end || t + need > doc.size()) return 1;
  for (int j = 1; j < need; ++j) {
    const auto& [bj, ej] = doc.offset(t + j);
    if (ej - bj != 1) return 1;
    const unsigned char cj = static_cast<unsigned char>(doc.bytes[static_cast<size_t>(bj)]);
    if ((cj & 0xC0) != 0x80) return 1;
  }
  return need;
}

}  // namespace

// A new step: new strip texture key, no selection, and the step's labels and QA answers.
void MtnMemoryPanel::on_step(const std::shared_ptr<const StepData>& step, const Document& doc) {
  ++key_;
  selected_entry_ = -1;
  layout_ = Layout{};
  layout_.step = step;
  const MtnData& d = step->mtn;
  layout_.cand_labels.reserve(d.cand_source.size());
  for (int64_t src : d.cand_source) layout_.cand_labels.push_back(src >= 0 && src < doc.size() ? token_text(doc, src) : "-");
  if (d.n_mem_candidates > 0)
    layout_.cand_groups = {{0, "previous memory"}, {d.n_mem_candidates, "chunk " + std::to_string(step->segment)}};
  else
    layout_.cand_groups = {{0, "chunk " + std::to_string(step->segment) + " (memory was empty)"}};
  layout_.qa = qa_answers(*step, doc);
}

// The document view's tokens and word wrap at `width` in the current font: once per step,
// width and font (up to kMaxDocumentView tokens).
void MtnMemoryPanel::layout_document(const StepData& st, const Document& doc, float width) {
  if (layout_.width == width && layout_.font == ImGui::GetFont() && layout_.font_size == ImGui::GetFontSize()) return;
  layout_.width = width;
  layout_.font = ImGui::GetFont();
  layout_.font_size = ImGui::GetFontSize();
  const MtnData& d = st.mtn;
  const int64_t n = d.view_end - d.view_first;
  auto& toks = layout_.doc;
  toks.assign(static_cast<size_t>(std::max<int64_t>(0, n)), DocToken{});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = d.view_first + i;
    // A character split over byte tokens (UTF-8) is drawn whole at its first token; the
    // tokens of its other bytes draw nothing (they still highlight and hover).
    const int len = utf8_joined_len(doc, t, d.view_end);
    DocToken& k = toks[static_cast<size_t>(i)];
    if (len > 1) {
      const int64_t b = doc.offset(t).first, e = doc.offset(t + len - 1).second;
      k.text = doc.bytes.substr(static_cast<size_t>(b), static_cast<size_t>(e - b));
      for (int j = 1; j < len; ++j) toks[static_cast<size_t>(i + j)].text.clear();
      k.w = ImGui::CalcTextSize(k.text.c_str()).x;
      i += len - 1;
      continue;
    }
    k.text = shown_text(doc, t, d.entry_of[static_cast<size_t>(i)] >= 0, &k.line_break);
    k.w = ImGui::CalcTextSize(k.text.c_str()).x;
  }
  const float lh = ImGui::GetTextLineHeight() + 3.f;
  layout_.line_h = lh;
  layout_.lead = d.view_first > 0 ? ImGui::CalcTextSize("\xE2\x80\xA6 ").x : 0.f;
  float x = layout_.lead, y = 0.f;
  for (size_t k = 0; k < toks.size(); ++k) {
    // Word wrap: at a word's first token, move the whole word to the next line if it does not fit.
    const bool word_start = k == 0 || toks[k - 1].text == " " || toks[k - 1].line_break;
    if (word_start && x > 0.f) {
      float ww = 0.f;
      for (size_t j = k; j < toks.size() && toks[j].text != " " && !toks[j].line_break; ++j) {
        ww += toks[j].w;
        if (ww > width) break;
      }
      if (x + ww > width && ww <= width) {
        x = 0.f;
        y += lh;
      }
    }
    if (x + toks[k].w > width && x > 0.f) {
      x = 0.f;
      y += lh;
    }
    toks[k].x = x;
    toks[k].y = y;
    x += toks[k].w;
    if (toks[k].line_break) {
      x = 0.f;
      y += lh;
    }
  }
  layout_.height = y + lh;
}

// Importance strip of keep_m_max's candidates, kept ones outlined; exact values on hover.
void MtnMemoryPanel::draw_candidates(const StepData& st, const Document& doc) {
  const MtnData& d = st.mtn;
  const int nc = static_cast<int>(d.cand_importance.size());
  if (nc == 0) return;
  const float a = std::max({std::fabs(d.imp_min), std::fabs(d.imp_max), 1e-6f});
  strip_.update(key_, d.cand_importance.data(), 1, nc, -a, a, viz::Colormap::Diverging);
  static const std::vector<std::string> kNoRows;
  ui::HeatmapAxes axes;
  axes.col_labels = &layout_.cand_labels;
  axes.row_labels = &kNoRows;
  if (d.n_mem_candidates > 0) axes.col_separators = {d.n_mem_candidates};
  axes.col_groups = layout_.cand_groups;
  axes.cmap = viz::Colormap::Diverging;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  auto hit = ui::draw_heatmap("##cand", strip_, ImVec2(ImGui::GetContentRegionAvail().x, line * 3.2f), axes);
  if (!strip_.empty()) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float cw = (hit.plot_max.x - hit.plot_min.x) / static_cast<float>(nc);
    for (int c = 0; c < nc; ++c)
      if (d.cand_kept[static_cast<size_t>(c)]) {
        const float x0 = hit.plot_min.x + cw * static_cast<float>(c);
        dl->AddRect(ImVec2(x0 + 0.5f, hit.plot_min.y + 0.5f), ImVec2(x0 + std::max(2.f, cw) - 0.5f, hit.plot_max.y - 0.5f),
                    IM_COL32(0, 0, 0, 255), 0.f, 0, cw > 6.f ? 2.f : 1.f);
      }
  }
  if (hit.hovered) {
    const size_t c = static_cast<size_t>(hit.col);
    ImGui::BeginTooltip();
    ImGui::Text("%s", mtn_token_context(doc, d.cand_source[c]).c_str());
    ImGui::Text("importance %.6f  (%s)", d.cand_importance[c], hit.col < d.n_mem_candidates ? "was in memory" : "chunk token");
    ImGui::TextUnformatted(d.cand_kept[c] ? "kept for the next chunk (outlined)" : "dropped");
    ImGui::EndTooltip();
  }
}

// The kept entries in memory order (a click selects one); returns the hovered entry (-1: none).
int MtnMemoryPanel::draw_entries(const MtnData& d, const Document& doc) {
  int hovered_entry = -1;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float imp_span = std::max(1e-6f, d.imp_max - std::min(0.f, d.imp_min));
  const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##entries", 4, tf, ImVec2(0, std::max(line * 3.f, ImGui::GetContentRegionAvail().y)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("#");
    ImGui::TableSetupColumn("token [context]", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("importance", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("importance").x + 6.f);
    ImGui::TableSetupColumn("age");
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < d.entries.size(); ++i) {
      const MtnEntry& e = d.entries[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string id = std::to_string(i) + "##e" + std::to_string(i);
      if (ImGui::Selectable(id.c_str(), static_cast<int>(i) == selected_entry_, ImGuiSelectableFlags_SpanAllColumns))
        selected_entry_ = static_cast<int>(i) == selected_entry_ ? -1 : static_cast<int>(i);
      if (ImGui::IsItemHovered()) hovered_entry = static_cast<int>(i);
      ImGui::TableNextColumn();
      if (e.source < 0) {
        ImGui::TextDisabled("(empty)");
        continue;
      }
      ImGui::TextUnformatted(mtn_token_context(doc, e.source, 3).c_str());
      ImGui::TableNextColumn();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", e.importance);
      ui::inline_bar((e.importance - std::min(0.f, d.imp_min)) / imp_span, IM_COL32(90, 160, 220, 200),
                     ImGui::GetTextLineHeight(), buf);
      ImGui::TableNextColumn();
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float h = ImGui::GetTextLineHeight();
      ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), age_color(e.age, d.max_age, false));
      ImGui::Dummy(ImVec2(h, h));
      ImGui::SameLine();
      ImGui::Text("%lld", static_cast<long long>(e.age));
    }
    ImGui::EndTable();
  }
  if (hovered_entry >= 0) {
    const MtnEntry& e = d.entries[static_cast<size_t>(hovered_entry)];
    ImGui::BeginTooltip();
    ImGui::Text("memory entry %d", hovered_entry);
    if (e.source >= 0) {
      ImGui::Text("%s", mtn_token_context(doc, e.source, 12).c_str());
      ImGui::Text("importance %.6f, survived %lld chunk%s", e.importance, static_cast<long long>(e.age), e.age == 1 ? "" : "s");
      // The bar's scale: an importance is a score, not a share, and may be negative.
      ImGui::TextDisabled("bar: %.3f (empty) to %.3f (full): 0 or this chunk's lowest importance, to its highest",
                          std::min(0.f, d.imp_min), d.imp_max);
      ImGui::TextDisabled("click: mark it in the document");
    } else {
      ImGui::TextUnformatted("empty (no token kept here yet)");
    }
    ImGui::EndTooltip();
  }
  return hovered_entry;
}

// The tooltip of document token t (hovered); a click on a kept token selects its entry.
void MtnMemoryPanel::document_tooltip(PanelContext& ctx, const StepData& st, const Document& doc, int64_t t) {
  const MtnData& d = st.mtn;
  const int64_t chunk0 = st.first_token, chunk1 = st.first_token + st.length;
  const int e = d.entry_of[static_cast<size_t>(t - d.view_first)];
  if (ctx.mono) ImGui::PopFont();
  ImGui::BeginTooltip();
  ImGui::Text("token #%lld '%s'%s", static_cast<long long>(t), token_text(doc, t).c_str(),
              t >= chunk0 && t < chunk1 ? "  (in this chunk)" : "");
  if (t >= chunk0 && t - chunk0 < static_cast<int64_t>(st.mtn.qa_answer_prob.size()))
    ImGui::Text("P(answer) %.6f (the QA head's tag)", st.mtn.qa_answer_prob[static_cast<size_t>(t - chunk0)]);
  if (e >= 0) {
    const MtnEntry& en = d.entries[static_cast<size_t>(e)];
    ImGui::Text("in memory: entry %d, importance %.6f, survived %lld chunk%s", e, en.importance,
                static_cast<long long>(en.age), en.age == 1 ? "" : "s");
    ImGui::TextDisabled("click: mark the entry");
  } else {
    ImGui::TextDisabled("not in memory");
  }
  ImGui::EndTooltip();
  if (ctx.mono) ImGui::PushFont(ctx.mono);
  if (e >= 0 && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
    selected_entry_ = e == selected_entry_ ? -1 : e;
    scrolled_for_ = layout_.step;  // the user is looking at it already
  }
}

// The document: running text, word-wrapped (layout_document), kept tokens on their age colour.
void MtnMemoryPanel::draw_document(PanelContext& ctx, const StepData& st, const Document& doc, int hovered_entry) {
  const MtnData& d = st.mtn;
  ImGui::BeginChild("##mtn_doc", ImVec2(0, 0), false);
  if (ctx.mono) ImGui::PushFont(ctx.mono);
  const float width = std::max(40.f, ImGui::GetContentRegionAvail().x - 4.f);
  layout_document(st, doc, width);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool win_hovered = ImGui::IsWindowHovered();
  const int64_t chunk0 = st.first_token, chunk1 = st.first_token + st.length;
  const float lh = layout_.line_h;
  int64_t hovered_tok = -1;
  float scroll_to = -1.f;
  if (d.view_first > 0) dl->AddText(origin, ImGui::GetColorU32(ImGuiCol_TextDisabled), "\xE2\x80\xA6");
  for (size_t k = 0; k < layout_.doc.size(); ++k) {
    const DocToken& tok = layout_.doc[k];
    const int64_t t = d.view_first + static_cast<int64_t>(k);
    const float w = std::max(tok.w, tok.line_break ? 0.f : 3.f);
    const ImVec2 p0(origin.x + tok.x, origin.y + tok.y), p1(p0.x + w, p0.y + lh - 1.f);
    if (t == chunk0) dl->AddLine(ImVec2(p0.x - 1.f, p0.y), ImVec2(p0.x - 1.f, p1.y), IM_COL32(255, 190, 40, 255), 2.f);
    if (t >= chunk0 && t < chunk1) dl->AddRectFilled(p0, ImVec2(p1.x, p1.y + 1.f), IM_COL32(255, 255, 255, 48));
    const int e = d.entry_of[k];
    ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
    if (e >= 0) {
      dl->AddRectFilled(p0, p1, age_color(d.entries[static_cast<size_t>(e)].age, d.max_age, true), 2.f);
      ink = IM_COL32(20, 20, 20, 255);
      if (e == selected_entry_ || e == hovered_entry) {
        dl->AddRect(ImVec2(p0.x - 1.f, p0.y - 1.f), ImVec2(p1.x + 1.f, p1.y + 1.f), IM_COL32(255, 214, 10, 255), 2.f, 0, 2.f);
        if (e == selected_entry_ && scrolled_for_ != layout_.step) scroll_to = tok.y;
      }
    } else if (t < chunk0) {
      ink = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    }
    dl->AddText(p0, ink, tok.text.c_str());
    if (win_hovered && mouse.x >= p0.x && mouse.x < p1.x && mouse.y >= p0.y && mouse.y < p1.y) hovered_tok = t;
  }
  ImGui::Dummy(ImVec2(width, layout_.height));
  if (scroll_to >= 0.f) {
    ImGui::SetScrollY(std::max(0.f, scroll_to - ImGui::GetWindowHeight() * 0.4f));
    scrolled_for_ = layout_.step;
  }
  if (hovered_tok >= 0) document_tooltip(ctx, st, doc, hovered_tok);
  if (ctx.mono) ImGui::PopFont();
  ImGui::EndChild();
}

void MtnMemoryPanel::draw(PanelContext& ctx) {
  strip_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  const PublishedView& s = ctx.view;
  if (!step || !step->mtn.present || !s.info || !s.info->doc) {
    ImGui::TextDisabled(step ? "This model's trace has no MTN memory (mtn.kept_source)." : "Step to a chunk to see the MTN memory.");
    return;
  }
  const MtnData& d = step->mtn;
  const Document& doc = *s.info->doc;
  if (step != layout_.step) on_step(step, doc);
  // The shared selection (the Document panel tints by its provenance) wins over ours.
  if (ctx.vm.selected_slot() != selected_entry_ && ctx.vm.slots() == static_cast<int>(d.entries.size()))
    selected_entry_ = ctx.vm.selected_slot();
  if (selected_entry_ >= static_cast<int>(d.entries.size())) selected_entry_ = -1;
  const int entry_before = selected_entry_;
  ImGui::Text("memory after chunk %lld: %lld of %zu entries kept", static_cast<long long>(step->segment),
              static_cast<long long>(d.kept), d.entries.size());
  ImGui::SameLine();
  ImGui::TextDisabled("oldest entry survived %lld chunk%s", static_cast<long long>(d.max_age), d.max_age == 1 ? "" : "s");
  export_button(ctx, PanelId::kMtnMemory);
  draw_qa_answers(layout_.qa, *step, doc);
  draw_candidates(*step, doc);

  // Kept entries | document.
  const ImGuiTableFlags flags = ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV;
  if (!ImGui::BeginTable("##mtn_split", 2, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupColumn("memory", ImGuiTableColumnFlags_WidthStretch, 0.5f);
  ImGui::TableSetupColumn("document", ImGuiTableColumnFlags_WidthStretch, 0.5f);
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  const int hovered_entry = draw_entries(d, doc);
  ImGui::TableNextColumn();
  draw_document(ctx, *step, doc, hovered_entry);
  ImGui::EndTable();
  if (selected_entry_ < 0) scrolled_for_.reset();
  hovered_entry_ = hovered_entry;
  if (selected_entry_ != entry_before) ctx.vm.select_slot(selected_entry_);
}

}  // namespace mnemo::app
