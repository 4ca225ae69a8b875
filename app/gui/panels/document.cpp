// Document: the text in a monospace grid, one cell per token (a multi-byte character spans
// the cells of its byte tokens), underlines marking token boundaries, the current segment
// highlighted and visited segments tinted. Hover a token for its id, bytes and loss; click
// to go to its segment. Only the visible rows are laid out (long documents stay cheap).
#include "app/gui/panels/panels.h"

#include "app/figures/benefit.h"
#include "app/figures/memory_reads.h"
#include "app/figures/slot_effects.h"

#include "viz/charts.h"
#include "viz/figure.h"
#include "app/gui/panels/widgets/heatmap.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {
const ImU32 kCurrent = IM_COL32(255, 186, 8, 90);
const ImU32 kVisited = IM_COL32(70, 130, 220, 55);
const ImU32 kBoundary = IM_COL32(255, 186, 8, 230);
const ImU32 kUnderline = IM_COL32(255, 255, 255, 45);
const ImU32 kText = IM_COL32(230, 230, 230, 255);
const ImU32 kDim = IM_COL32(140, 140, 150, 255);
const ImU32 kEscape = IM_COL32(240, 150, 110, 255);  // escaped bytes stand out from text
const ImU32 kEscapeBg = IM_COL32(240, 150, 110, 48);
const ImU32 kGutter = IM_COL32(255, 186, 8, 200);  // like the segment bars
constexpr float kMaxLossScale = DocumentPanel::kMaxLossScale;

// What one token cell shows: text glyph (normal colour) or a placeholder (dim colour).
struct Cell {
  std::string glyph;  // UTF-8 of one character, "" for blank
  bool dim = false;
  int span = 1;       // cells covered (a multi-byte character's tokens)
  std::string hex;    // a byte that is not UTF-8 text: its two hex digits, drawn stacked in the cell
  char32_t cp = 0;    // the code point of a multi-byte UTF-8 character (0 otherwise)
};

Cell cell_of(const Document& doc, int64_t t) {
  Cell c;
  const auto [b, e] = doc.offset(t);
  if (e - b != 1) {
    c.glyph = "\xE2\x96\xAA";  // ▪ (a token of several bytes cannot share the grid)
    c.dim = true;
    return c;
  }
  const unsigned char ch = static_cast<unsigned char>(doc.bytes[static_cast<size_t>(b)]);
  if (ch == ' ') return c;
  if (ch == '\n') {
    c.glyph = "\xE2\x86\xB5";  // ↵
    c.dim = true;
    return c;
  }
  if (ch == '\t') {
    c.glyph = "\xE2\x86\x92";  // →
    c.dim = true;
    return c;
  }
  if (ch >= 0x21 && ch < 0x7F) {
    c.glyph.assign(1, static_cast<char>(ch));
    return c;
  }
  if (ch >= 0xC0) {
    size_t i = static_cast<size_t>(b);
    char32_t cp = 0;
    if (viz::decode_utf8(doc.bytes, i, cp) && cp >= 0xA0) {
      c.glyph = doc.bytes.substr(static_cast<size_t>(b), i - static_cast<size_t>(b));
      c.span = static_cast<int>(i - static_cast<size_t>(b));
      c.cp = cp;
      return c;
    }
  }
  // A control byte, or a byte that is not part of valid UTF-8: escaped as \xHH (as the
  // figure axes do, viz::token_label), drawn as its two hex digits stacked in its one cell.
  char hex[4];
  std::snprintf(hex, sizeof hex, "%02X", ch);
  c.hex = hex;
  c.dim = true;
  return c;
}

bool is_continuation(const Document& doc, int64_t t) {
  const auto [b, e] = doc.offset(t);
  if (e - b != 1) return false;
  return (static_cast<unsigned char>(doc.bytes[static_cast<size_t>(b)]) & 0xC0) == 0x80;
}

}  // namespace

int DocumentPanel::effect_entry(const SlotEffects& fx, int selected, int chosen) {
  if (fx.empty()) return -1;
  if (selected >= 0 && selected < fx.entries()) return selected;
  if (chosen >= 0 && chosen < fx.entries()) return chosen;
  const int a = std::max(0, fx.ablation("reset"));
  return static_cast<int>(fx.ranking(static_cast<size_t>(a)).front());
}

bool DocumentPanel::continues_character(const Document& doc, int64_t t) {
  if (!is_continuation(doc, t)) return false;
  for (int64_t k = 1; k <= 3 && t - k >= 0; ++k) {
    const auto [b, e] = doc.offset(t - k);
    if (e - b != 1) return false;
    const unsigned char ch = static_cast<unsigned char>(doc.bytes[static_cast<size_t>(b)]);
    if ((ch & 0xC0) == 0x80) continue;
    if (ch < 0xC0) return false;
    size_t i = static_cast<size_t>(b);
    char32_t cp = 0;
    return viz::decode_utf8(doc.bytes, i, cp) && static_cast<int64_t>(i) > doc.offset(t).first;
  }
  return false;
}

namespace {

// The glyph `font` draws code point `cp` with itself (null: none, it would draw "?").
const ImFontGlyph* glyph_of(ImFont* font, char32_t cp) {
  if (cp == 0 || cp > IM_UNICODE_CODEPOINT_MAX) return nullptr;
  return font->FindGlyphNoFallback(static_cast<ImWchar>(cp));
}


std::string describe_bytes(const Document& doc, int64_t t) {
  const auto [b, e] = doc.offset(t);
  std::string s;
  char buf[8];
  for (int64_t i = b; i < e; ++i) {
    std::snprintf(buf, sizeof buf, "%s0x%02X", i == b ? "" : " ", static_cast<unsigned char>(doc.bytes[static_cast<size_t>(i)]));
    s += buf;
  }
  return s;
}

}  // namespace

std::string DocumentPanel::cell_text(const Document& doc, int64_t t) {
  if (t < 0 || t >= doc.size()) return "";
  const Cell c = cell_of(doc, t);
  return c.hex.empty() ? c.glyph : "\\x" + c.hex;
}

std::string DocumentPanel::notice(const ViewSource& info) {
  std::string out;
  if (info.not_text)
    out = "not UTF-8 text: bytes that are not UTF-8 (or NUL and control bytes) are shown as their two hex digits, "
          "stacked on an orange cell (\\xHH; hover for the byte)";
  // Unlike the model's training text (core/data/text_stats.h): said, never left out.
  for (const auto& w : info.doc_warnings) out += (out.empty() ? "" : "\n") + ("Unlike the training text: " + w);
  return out;
}

std::string DocumentPanel::changed_notice(const Document& doc) {
  if (!doc.changed_on_disk()) return "";
  return "'" + doc.path +
         "' changed on disk since it was opened (a large file is read in place, not copied): what is shown and "
         "stepped may mix its old and new bytes, and bytes past a shortened end read as \\x00. Open it again "
         "(Ctrl+O) to see it as it is now.";
}

void DocumentPanel::note_missing_glyph(char32_t cp) {
  if (cp > IM_UNICODE_CODEPOINT_MAX || missing_seen_.size() >= kMaxMissingGlyphs) return;
  if (missing_seen_.insert(cp).second) missing_new_.push_back(cp);
}

std::vector<char32_t> DocumentPanel::take_missing_glyphs() {
  std::vector<char32_t> out;
  out.swap(missing_new_);
  return out;
}

void DocumentPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.session;
  if (!s.info || !s.info->doc) {
    ImGui::TextDisabled("No document. Open one with Ctrl+O or drop a file on the window.");
    return;
  }
  const ViewSource& info = *s.info;
  const Document& doc = *info.doc;
  const int64_t L = std::max<int64_t>(1, info.segment_len);
  const int64_t cur_first = s.position >= 0 ? s.position * L : -1;
  const int64_t cur_last = s.position >= 0 ? std::min(doc.size(), cur_first + L) : -1;

  // Header: where we are, the legend, the loss tint switch.
  ImGui::Text("%lld tokens, %lld segments of %lld", static_cast<long long>(doc.size()),
              static_cast<long long>(info.num_segments), static_cast<long long>(L));
  export_button(ctx, PanelId::kDocument);
  // Checked twice a second (a stat of the file), not every frame.
  if (const double now = ImGui::GetTime(); &doc != changed_doc_ || now - changed_checked_at_ >= 0.5) {
    changed_ = changed_notice(doc);
    changed_doc_ = &doc;
    changed_checked_at_ = now;
  }
  if (!changed_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.35f, 0.3f, 1.f));
    ImGui::TextWrapped("%s", changed_.c_str());
    ImGui::PopStyleColor();
  }
  if (const std::string note = notice(info); !note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.73f, 0.03f, 1.f));
    // One paragraph a line of the notice, wrapped at spaces: never inside a number ("(1." / "32 %)").
    for (size_t a = 0; a <= note.size();) {
      const size_t b = std::min(note.find('\n', a), note.size());
      ui::text_wrapped_at_spaces(note.substr(a, b - a));
      a = b + 1;
    }
    ImGui::PopStyleColor();
  }
  if (tint_ == kTintVisited) {
    ImGui::ColorButton("##cur", ImGui::ColorConvertU32ToFloat4(kCurrent | IM_COL32(0, 0, 0, 255)),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize()));
    ImGui::SameLine(0, 3);
    ImGui::TextUnformatted("current");
    ImGui::SameLine();
    ImGui::ColorButton("##vis", ImGui::ColorConvertU32ToFloat4(IM_COL32(70, 130, 220, 255)), ImGuiColorEditFlags_NoTooltip,
                       ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize()));
    ImGui::SameLine(0, 3);
    ImGui::TextUnformatted("visited");
  } else if (tint_ == kTintLoss) {
    // The loss tint's own scale (the current segment's highlight gives way to it).
    ui::colormap_strip(viz::Colormap::Magma, kLossTintFloor, 1.f);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Loss of predicting each token, in nats: 0 (dark purple) .. %.0f and more (light yellow), 16 "
                        "levels.\nUntinted: no step you visited predicted the token (step to it, or to the segment "
                        "before it for a model that predicts the next segment).",
                        kMaxLossScale);
    ImGui::SameLine(0, 4);
    ImGui::Text("0..%.0f nats", kMaxLossScale);
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.f);
  const char* tints[] = {"tint: visited", "tint: loss", "tint: provenance", "tint: benefit", "tint: slot effect"};
  ImGui::Combo("##tint", &tint_, tints, 5);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("visited: the segments stepped through\n"
                      "loss: the loss of predicting each visited token (magma, 0..%.0f nats)\n"
                      "provenance: which earlier tokens the selected memory entry's content came from (viridis)\n"
                      "benefit: the bits the memory saved on each visited token against the memory reset to the\n"
                      "  initial memory (blue: it helped, red: it hurt; +-%.0f bits)\n"
                      "slot effect: the bits one memory entry (slot, memory token, cache block, kept entry) saved\n"
                      "  on each token the shown step predicts: the step again with that entry reset to the initial\n"
                      "  memory (blue: it helped, red: it hurt)",
                      kMaxLossScale, kBenefitScale);
  if (tint_ == kTintBenefit) {
    // Legend and the current step's total (app/figures/benefit.h).
    ImGui::SameLine();
    ui::colormap_strip(viz::Colormap::Diverging);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Bits the memory saved on a token: +%.0f (blue, it helped) .. 0 (white) .. -%.0f (red, it hurt)",
                        kBenefitScale, kBenefitScale);
    const double total = s.step ? segment_benefit_bits(*s.step) : NAN;
    if (s.step && s.step->token_losses_reset.empty() && !s.step->token_losses.empty())
      ImGui::TextDisabled("this model has no memory: nothing to show");
    else if (std::isfinite(total))
      ImGui::Text("segment %lld's predictions: memory saved %+.2f bits", static_cast<long long>(s.step->segment), total);
    else
      ImGui::TextDisabled("step a segment to see what the memory saved");
  }
  // Slot effects (docs/gui.md#slot-effects): the selected entry's effect on the shown step's
  // predictions, computed by the worker on request.
  const SlotEffects* fx = nullptr;
  int fx_entry = -1, fx_ablation = 0;
  float fx_scale = 1.f;
  if (tint_ == kTintSlotEffect) {
    if (s.slot_effects && s.step && s.slot_effects->segment == s.step->segment && !s.slot_effects->empty())
      fx = s.slot_effects.get();
    if (!s.step) {
      ImGui::TextDisabled("step a segment, then compute what each memory entry did for its predictions");
    } else if (!fx) {
      if (ctx.control.busy()) {
        ImGui::TextDisabled("computing...");
      } else if (!ctx.preview && ImGui::SmallButton("compute slot effects")) {
        ctx.control.compute_slot_effects();
      }
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Steps segment %lld again with each memory entry removed (reset to the initial memory, and\n"
                          "zeroed), on the model's thread; a model without memory has none",
                          static_cast<long long>(s.step->segment));
    } else {
      fx_ablation = std::max(0, fx->ablation("reset"));
      fx_entry = effect_entry(*fx, ctx.vm.selected_slot(), chosen_effect_entry_);
      fx_scale = fx->scale(static_cast<size_t>(fx_ablation));
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.f);
      int shown = fx_entry;
      if (ImGui::InputInt("##entry", &shown)) {
        shown = std::max(0, std::min(shown, static_cast<int>(fx->entries()) - 1));
        chosen_effect_entry_ = shown;
        ctx.vm.select_slot(shown);
        fx_entry = effect_entry(*fx, ctx.vm.selected_slot(), chosen_effect_entry_);
      }
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The memory entry whose effect tints the text; selecting a slot in any panel does the same");
      ImGui::SameLine();
      ui::colormap_strip(viz::Colormap::Diverging);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Bits a token costs more without %s (reset to the initial memory): +%.2f (blue, it helped) .. "
                          "0 (white) .. -%.2f (red, it hurt)",
                          fx->labels[static_cast<size_t>(fx_entry)].c_str(), fx_scale, fx_scale);
      const size_t a = static_cast<size_t>(fx_ablation);
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s saved %+.2f bits on segment %lld's predictions; every entry at once %+.2f, the single entries' "
                    "sum %+.2f (they need not add up)",
                    fx->labels[static_cast<size_t>(fx_entry)].c_str(), fx->entry_bits(a, fx_entry),
                    static_cast<long long>(fx->segment), fx->all_entries_bits(a), fx->sum_of_entries(a));
      ui::text_wrapped_at_spaces(line);
      if (!fx->entries_removed)
        ImGui::TextDisabled("segment 0 starts from the initial memory: nothing written to remove");
    }
  }
  // Provenance of the selected slot (docs/gui.md#provenance): a second colour scale.
  const ProvenanceState* prov = tint_ == kTintProvenance && s.provenance ? s.provenance.get() : nullptr;
  int prov_slot = -1;
  float prov_max = 0.f;
  if (tint_ == kTintProvenance) {
    if (!s.provenance) {
      ImGui::TextDisabled("%s", !s.provenance_note.empty() ? s.provenance_note.c_str()
                                                           : "Provenance: step a segment first.");
    } else {
      prov_slot = ctx.vm.selected_slot();
      if (prov_slot < 0 || prov_slot >= prov->slots) prov_slot = -1;
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.f);
      int shown = prov_slot >= 0 ? prov_slot : chosen_slot_;
      if (ImGui::InputInt("entry", &shown)) {
        shown = std::max(0, std::min(shown, prov->slots - 1));
        chosen_slot_ = shown;
        ctx.vm.select_slot(shown);
        prov_slot = ctx.vm.selected_slot();
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("The memory entry (slot) whose provenance tints the text; selecting one anywhere does the same");
      if (prov_slot < 0) {
        ImGui::SameLine();
        ImGui::TextDisabled("select a slot (click a row of any slot panel, or type one)");
      } else {
        prov_max = prov->row_max(prov_slot);
        ImGui::SameLine();
        // Legend: the sequential scale from 0 to the slot's largest token share.
        ui::colormap_strip(ctx.seq_cmap);
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("Share of slot %d's content from each token: 0 (dark) .. %.4f (yellow, its largest)", prov_slot,
                            prov_max);
        ImGui::SameLine();
        ImGui::Text("0..%.3g   initial memory %.1f%%", prov_max, 100.f * prov->initial[prov_slot]);
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("Share of slot %d's content still from the initial memory m_0 (before the first segment)", prov_slot);
        if (prov->other[prov_slot] > 0.0005f) {
          ImGui::SameLine();
          ImGui::Text("other %.1f%%", 100.f * prov->other[prov_slot]);
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Content from inputs that are not document tokens: Memformer's cls tokens, trxl-rmt's token cache");
        }
      }
    }
  }
  // The selected token's memory reads (app/figures/memory_reads.h): what it read most and
  // what those entries held. Kept while the shown step's segment holds the token.
  if (selected_info_ != 0 && selected_info_ != info.id) selected_token_ = -1;  // another document or model
  selected_info_ = info.id;
  MemoryReads sel;
  if (selected_token_ >= 0 && s.step) sel = memory_reads(*s.step, s.visited, selected_token_, 3, s.provenance_before.get());
  held_.clear();
  if (!sel.empty()) {
    char buf[128];
    // A read of its own (Memformer's slots) sums to 1 by construction: a share of 100% there
    // says nothing, so say what the weights are instead.
    const long long tok = static_cast<long long>(selected_token_);
    const std::string text = token_text(doc, selected_token_);
    if (sel.predicted)
      std::snprintf(buf, sizeof buf,
                    "token #%lld '%s', predicted at this step, drew on the slots through the decoder (weights sum to 1): "
                    "most on",
                    tok, text.c_str());
    else if (sel.own_read)
      std::snprintf(buf, sizeof buf, "token #%lld '%s' read the slots (the encoder's memory read; weights sum to 1): most on",
                    tok, text.c_str());
    else
      std::snprintf(buf, sizeof buf, "token #%lld '%s' put %.1f%% of its attention on memory; most on", tok, text.c_str(),
                    100.f * sel.memory_share);
    std::string line = buf;
    for (size_t i = 0; i < sel.top.size(); ++i) {
      const auto& r = sel.top[i];
      if (r.token >= 0) std::snprintf(buf, sizeof buf, "%s %s #%lld (%.3g)", i ? "," : "", sel.entry_name.c_str(), static_cast<long long>(r.token), r.weight);
      else std::snprintf(buf, sizeof buf, "%s %s %d (%.3g)", i ? "," : "", sel.entry_name.c_str(), r.entry, r.weight);
      line += buf;
      for (const auto& h : r.holds) held_.push_back(h.token);
    }
    if (std::isfinite(sel.gate)) {  // a gated read (model.memory_gate) counts only as much as its gate
      std::snprintf(buf, sizeof buf, "; the read enters at gate %.3g", sel.gate);
      line += buf;
    }
    ui::text_wrapped_at_spaces(line);  // never inside a number ("(0." / "474)")
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::Text("Weights: %s.", sel.how.c_str());
      ImGui::Text("On memory in all: %.4f over %d entries.", sel.memory_share, sel.entries_total);
      for (const auto& r : sel.top) memory_read_lines(doc, sel, r);
      if (!sel.holds_known) ImGui::TextDisabled("%s", sel.holds_note.c_str());
      ImGui::TextDisabled("What they held is outlined in cyan in the text; click the token again to clear.");
      ImGui::EndTooltip();
    }
  }
  ui::help_marker(
      "One cell per token (bytes: a character of several bytes spans their cells); underlines mark token\n"
      "boundaries, amber bars segment starts, with the segment's number in the margin.\n"
      "Hover a token for its id, bytes and loss; click one of the current segment to see what it read\n"
      "from the memory and what that memory held (outlined) - for Memformer also one of the segment the\n"
      "step predicts, through the decoder; click another to go to its segment.");

  ImFont* font = ctx.mono ? ctx.mono : ImGui::GetFont();
  const float fs = font->FontSize;
  const float cw = font->CalcTextSizeA(fs, FLT_MAX, 0.f, "M").x;
  const float row_h = fs + 5.f;
  // The hex digits of escaped bytes and glyph-less code points: a font rasterized small.
  ImFont* small = ctx.small_mono ? ctx.small_mono : font;
  char gutter_buf[32];
  std::snprintf(gutter_buf, sizeof gutter_buf, "%lld ", static_cast<long long>(std::max<int64_t>(info.num_segments - 1, 0)));
  const float gutter_w = font->CalcTextSizeA(fs, FLT_MAX, 0.f, gutter_buf).x + 4.f;

  const float header_h = ImGui::GetCursorPosY();  // title bar and the lines above the text
  if (!ImGui::BeginChild("##doctext", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar)) {
    ImGui::EndChild();
    return;
  }
  const float avail_w = ImGui::GetContentRegionAvail().x;
  const int cols = std::max(8, static_cast<int>((avail_w - gutter_w) / cw));
  const auto& ls = info.line_starts;
  const int64_t n_lines = static_cast<int64_t>(ls.size());
  if (layout_info_ != info.id || layout_cols_ != cols || row_prefix_.size() != ls.size() + 1) {
    row_prefix_.assign(ls.size() + 1, 0);
    for (int64_t i = 0; i < n_lines; ++i) {
      const int64_t len = (i + 1 < n_lines ? ls[static_cast<size_t>(i + 1)] : doc.size()) - ls[static_cast<size_t>(i)];
      row_prefix_[static_cast<size_t>(i + 1)] =
          static_cast<uint32_t>(row_prefix_[static_cast<size_t>(i)] + std::max<int64_t>(1, (len + cols - 1) / cols));
    }
    layout_info_ = info.id;
    layout_cols_ = cols;
  }
  auto row_of_token = [&](int64_t t) {
    const int64_t line = static_cast<int64_t>(std::upper_bound(ls.begin(), ls.end(), t) - ls.begin()) - 1;
    return int64_t{row_prefix_[static_cast<size_t>(line)]} + (t - ls[static_cast<size_t>(line)]) / cols;
  };
  // Bring the current segment into view when it changes.
  if (s.position != scrolled_to_ || scrolled_info_ != info.id) {
    scrolled_to_ = s.position;
    scrolled_info_ = info.id;
    if (cur_first >= 0 && cur_first < doc.size()) {
      const float y0 = static_cast<float>(row_of_token(cur_first)) * row_h;
      const float y1 = static_cast<float>(row_of_token(std::max(cur_first, cur_last - 1)) + 1) * row_h;
      const float top = ImGui::GetScrollY(), h = ImGui::GetWindowHeight();
      if (y0 < top || y1 > top + h) ImGui::SetScrollY(std::max(0.f, y0 - 0.3f * h));
    }
  }

  // A tour's highlighted token: brought into view once.
  if (ctx.highlight_token != scrolled_highlight_) {
    scrolled_highlight_ = ctx.highlight_token;
    if (ctx.highlight_token >= 0 && ctx.highlight_token < doc.size()) {
      const float y0 = static_cast<float>(row_of_token(ctx.highlight_token)) * row_h;
      const float top = ImGui::GetScrollY(), h = ImGui::GetWindowHeight();
      if (y0 < top || y0 + row_h > top + h) ImGui::SetScrollY(std::max(0.f, y0 - 0.3f * h));
    }
  }
  // Side by side: both Document panels show the same token row (ScrollLink). A move by the
  // other side is followed; a move of this one (the user's, or the step's scroll above) is
  // passed on.
  auto token_of_row = [&](int64_t r) {
    r = std::max<int64_t>(0, std::min<int64_t>(r, int64_t{row_prefix_.back()} - 1));
    const int64_t line =
        static_cast<int64_t>(std::upper_bound(row_prefix_.begin(), row_prefix_.end(), static_cast<uint32_t>(r)) - row_prefix_.begin()) - 1;
    return std::min<int64_t>(ls[static_cast<size_t>(line)] + (r - row_prefix_[static_cast<size_t>(line)]) * cols, doc.size() - 1);
  };
  const float scroll_y = ImGui::GetScrollY();
  top_token_ = n_lines > 0 && doc.size() > 0 ? token_of_row(static_cast<int64_t>(scroll_y / row_h)) : -1;
  if (link_ && n_lines > 0 && doc.size() > 0) {
    if (link_->version != link_seen_ && link_->side != link_side_ && link_->token >= 0 && link_->token < doc.size()) {
      const float y = (static_cast<float>(row_of_token(link_->token)) + link_->row_frac) * row_h;
      ImGui::SetScrollY(y);
      link_last_y_ = y;
      link_seen_ = link_->version;
    } else if (std::fabs(scroll_y - link_last_y_) > 0.5f) {
      const int64_t r = static_cast<int64_t>(scroll_y / row_h);
      link_->token = token_of_row(r);
      link_->row_frac = scroll_y / row_h - static_cast<float>(r);
      link_->side = link_side_;
      link_seen_ = ++link_->version;
      link_last_y_ = scroll_y;
    }
  }
  const int64_t total_rows = row_prefix_.back();
  wanted_h_ = header_h + static_cast<float>(std::min<int64_t>(total_rows, 100000)) * row_h + 2.f * ImGui::GetStyle().WindowPadding.y;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ui::ColorLut lut(viz::Colormap::Magma);
  ui::ColorLut plut(ctx.seq_cmap);
  ui::ColorLut dlut(viz::Colormap::Diverging);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered_window = ImGui::IsWindowHovered();
  int64_t hover_token = -1;
  std::string text, dim;

  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(std::min<int64_t>(total_rows, INT32_MAX)), row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const int64_t line =
          static_cast<int64_t>(std::upper_bound(row_prefix_.begin(), row_prefix_.end(), static_cast<int64_t>(r)) - row_prefix_.begin()) - 1;
      const int64_t line_end = line + 1 < n_lines ? ls[static_cast<size_t>(line + 1)] : doc.size();
      const int64_t start = ls[static_cast<size_t>(line)] + (r - row_prefix_[static_cast<size_t>(line)]) * cols;
      const int64_t end = std::min<int64_t>(start + cols, line_end);
      const float y = origin.y + static_cast<float>(r) * row_h;
      const float x0 = origin.x + gutter_w;

      // Gutter: the segment that starts in this row (or the row's segment on a line start).
      const int64_t first_seg = (start + L - 1) / L;
      if (first_seg * L < end) {
        std::snprintf(gutter_buf, sizeof gutter_buf, "%lld", static_cast<long long>(first_seg));
        dl->AddText(font, fs, ImVec2(origin.x, y + 1.f), kGutter, gutter_buf);
      }

      // Backgrounds, merged into runs of equal colour.
      ImU32 run_col = 0;
      int64_t run_start = start;
      auto bg_of = [&](int64_t t) -> ImU32 {
        const int64_t seg = t / L;
        // A provenance tint wins over the current segment's highlight (whose start stays marked
        // by the amber bar): the current segment is where most of a fresh slot comes from.
        if (prov && prov_slot >= 0) {
          const float w = prov->at(prov_slot, t);
          if (w > 0.f && prov_max > 0.f) {
            const float q = std::ceil(std::min(1.f, w / prov_max) * 16.f) / 16.f;  // 16 levels: runs stay long
            return (plut.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
          }
          return 0u;
        }
        // So does the loss tint (the loss of the current segment's tokens is what one steps to see).
        if (tint_ == kTintLoss) {
          const float q = loss_tint_position(s.token_loss(t));
          if (std::isfinite(q)) return (lut.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
        }
        if (fx && fx_entry >= 0) {
          const float bits = fx->token_bits(static_cast<size_t>(fx_ablation), fx_entry, t);
          if (std::isfinite(bits)) {
            const float u = std::clamp(0.5f - 0.5f * bits / fx_scale, 0.f, 1.f);
            return (dlut.at(std::round(u * 16.f) / 16.f) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
          }
        }
        if (tint_ == kTintBenefit) {
          const TokenLossAt l = token_loss_at(s.visited, L, t);
          const float bits = (l.loss_reset - l.loss) / std::log(2.f);
          if (std::isfinite(bits)) {
            const float u = std::clamp(0.5f - 0.5f * bits / kBenefitScale, 0.f, 1.f);
            const float q = (std::round(u * 16.f)) / 16.f;  // 17 levels, 0.5 (no difference) among them
            return (dlut.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
          }
        }
        if (t >= cur_first && t < cur_last) return kCurrent;
        return s.is_visited(seg) ? kVisited : 0u;
      };
      for (int64_t t = start; t <= end; ++t) {
        const ImU32 c = t < end ? bg_of(t) : ~0u;
        if (t == end || c != run_col) {
          if (run_col != 0 && t > run_start)
            dl->AddRectFilled(ImVec2(x0 + static_cast<float>(run_start - start) * cw, y),
                              ImVec2(x0 + static_cast<float>(t - start) * cw, y + row_h - 1.f), run_col);
          run_col = c;
          run_start = t;
        }
      }
      // Token boundaries (underlines) and segment boundaries (bars).
      for (int64_t t = start; t < end; ++t) {
        const float x = x0 + static_cast<float>(t - start) * cw;
        dl->AddLine(ImVec2(x + 1.f, y + fs + 2.f), ImVec2(x + cw - 1.f, y + fs + 2.f), kUnderline);
        if (t % L == 0) dl->AddLine(ImVec2(x, y), ImVec2(x, y + row_h - 1.f), kBoundary, 2.f);
      }
      // Text: two strings per row (normal and dim glyphs), one cell per token.
      text.clear();
      dim.clear();
      bool leading = true;  // the row's first bytes may continue a character begun on the previous row
      for (int64_t t = start; t < end;) {
        if (leading && continues_character(doc, t)) {
          text += ' ';
          dim += ' ';
          ++t;
          continue;
        }
        leading = false;
        const Cell c = cell_of(doc, t);
        const int span = static_cast<int>(std::min<int64_t>(c.span, end - t));
        const float hx = x0 + static_cast<float>(t - start) * cw;
        const ImFontGlyph* glyph = glyph_of(font, c.cp);  // one lookup per cell (drawn every frame)
        const bool no_glyph = c.cp != 0 && !glyph;
        if (no_glyph) note_missing_glyph(c.cp);
        if (!c.hex.empty()) {
          // The byte's two hex digits stacked on a tinted cell, each as large as the row allows
          // (the tooltip and the legend say it is a byte that is not UTF-8: \xHH).
          const float hs = std::min(small->FontSize, 0.5f * (row_h - 1.f));
          dl->AddRectFilled(ImVec2(hx + 0.5f, y + 0.5f), ImVec2(hx + cw - 0.5f, y + row_h - 0.5f), kEscapeBg, 2.f);
          const char d0[2] = {c.hex[0], 0}, d1[2] = {c.hex[1], 0};
          const float top = y + 0.5f * (row_h - 2.f * hs) - 0.5f;
          dl->AddText(small, hs, ImVec2(hx + 0.5f * cw - small->CalcTextSizeA(hs, FLT_MAX, 0.f, d0).x * 0.5f, top), kEscape, d0);
          dl->AddText(small, hs, ImVec2(hx + 0.5f * cw - small->CalcTextSizeA(hs, FLT_MAX, 0.f, d1).x * 0.5f, top + hs),
                      kEscape, d1);
          text += ' ';
          dim += ' ';
        } else if (no_glyph) {
          // A character no loaded font has (until the fallback font is merged in, or where it
          // has none either): its code point in hex across its cells, never "?".
          char code[12];
          std::snprintf(code, sizeof code, "%X", static_cast<unsigned>(c.cp));
          const float room = static_cast<float>(span) * cw - 2.f;
          float hs = small->FontSize;
          const float w = small->CalcTextSizeA(hs, FLT_MAX, 0.f, code).x;
          if (w > room) hs *= room / w;
          const float tw = small->CalcTextSizeA(hs, FLT_MAX, 0.f, code).x;
          dl->AddRect(ImVec2(hx + 0.5f, y + 1.5f), ImVec2(hx + static_cast<float>(span) * cw - 0.5f, y + row_h - 1.5f), kDim, 2.f);
          dl->AddText(small, hs, ImVec2(hx + 0.5f * (static_cast<float>(span) * cw - tw), y + 0.5f * (row_h - hs)), kDim, code);
          text += ' ';
          dim += ' ';
        } else if (c.glyph.empty()) {
          text += ' ';
          dim += ' ';
        } else if (glyph && glyph->AdvanceX * fs / font->FontSize > 1.05f * cw) {
          // A wide glyph (CJK, from the fallback font): drawn on its own from its first cell so
          // the row's grid stays one cell per token.
          dl->AddText(font, fs, ImVec2(hx, y + 1.f), kText, c.glyph.c_str());
          text += ' ';
          dim += ' ';
        } else if (c.dim) {
          text += ' ';
          dim += c.glyph;
        } else {
          text += c.glyph;
          dim += ' ';
        }
        for (int i = 1; i < span; ++i) {
          text += ' ';
          dim += ' ';
        }
        t += span;
      }
      dl->AddText(font, fs, ImVec2(x0, y + 1.f), kText, text.data(), text.data() + text.size());
      dl->AddText(font, fs, ImVec2(x0, y + 1.f), kDim, dim.data(), dim.data() + dim.size());
      // The selected token (yellow) and what the memory entries it read held (cyan): outlined.
      const float olw = std::max(1.f, ImGui::GetFontSize() / 15.f);
      for (int64_t h : held_)
        if (h >= start && h < end) {
          const float hx = x0 + static_cast<float>(h - start) * cw;
          dl->AddRect(ImVec2(hx, y), ImVec2(hx + cw, y + row_h - 1.f), IM_COL32(0, 220, 230, 255), 0.f, 0, 2.f * olw);
        }
      if (!sel.empty() && selected_token_ >= start && selected_token_ < end) {
        const float hx = x0 + static_cast<float>(selected_token_ - start) * cw;
        dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(255, 214, 10, 255), 0.f, 0, 2.f * olw);
      }
      // A tour's highlighted token: outlined.
      if (ctx.highlight_token >= start && ctx.highlight_token < end) {
        const float hx = x0 + static_cast<float>(ctx.highlight_token - start) * cw;
        const float lw = std::max(1.f, ImGui::GetFontSize() / 15.f);
        dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(0, 0, 0, 255), 0.f, 0, 4.f * lw);
        dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(255, 70, 70, 255), 0.f, 0, 2.f * lw);
      }

      if (hovered_window && mouse.y >= y && mouse.y < y + row_h && mouse.x >= x0) {
        const int64_t c = static_cast<int64_t>((mouse.x - x0) / cw);
        if (c < end - start) hover_token = start + c;
      }
    }
  }
  ImGui::Dummy(ImVec2(gutter_w + static_cast<float>(cols) * cw, 0.f));

  if (hover_token >= 0) {
    const int64_t t = hover_token, seg = t / L;
    ImGui::BeginTooltip();
    ImGui::Text("token #%lld  (segment %lld, position %lld)", static_cast<long long>(t), static_cast<long long>(seg),
                static_cast<long long>(t - seg * L));
    ImGui::Text("id %lld, bytes %s  '%s'", static_cast<long long>(doc.id(t)), describe_bytes(doc, t).c_str(),
                token_text(doc, t).c_str());
    // Which step predicts token t is the model's (core/models/config.h LossTarget).
    const TokenLossAt loss = token_loss_at(s.visited, L, t);
    const bool next_segment = loss_target_of(s.info->cfg.model) == LossTarget::kNextSegment;
    const int64_t by = predicting_segment(next_segment, L, t);
    if (loss.segment >= 0 && std::isfinite(loss.loss)) {
      ImGui::Text("loss %.4f nats = %.4f bits (predicted at the step of segment %lld)", loss.loss, loss.loss / std::log(2.f),
                  static_cast<long long>(loss.segment));
      if (std::isfinite(loss.loss_reset)) {
        const float ln2 = std::log(2.f);
        ImGui::Text("memory saved %+.4f bits: %.4f bits with the memory reset to the initial memory, %.4f zeroed",
                    (loss.loss_reset - loss.loss) / ln2, loss.loss_reset / ln2, loss.loss_zeroed / ln2);
      }
    }
    else if (loss.segment >= 0)
      ImGui::TextColored(ImVec4(1, 0, 1, 1), "loss: %f (non-finite)", loss.loss);
    else if (by < 0)
      ImGui::TextDisabled(next_segment ? "loss: none (segment 0 is never predicted)" : "loss: none (the first token is never predicted)");
    else if (!s.is_visited(by))
      ImGui::TextDisabled("loss: step segment %lld to compute it", static_cast<long long>(by));
    else
      ImGui::TextDisabled("loss: none (the step of segment %lld predicts no token here)", static_cast<long long>(by));
    if (prov && prov_slot >= 0) {
      const float w = prov->at(prov_slot, t);
      ImGui::Text("provenance of slot %d: %.6f (%.2f%% of its content)", prov_slot, w, 100.f * w);
    }
    // A token of the shown segment, or one its step predicts (Memformer's next segment).
    const MemoryReads reads = s.step ? memory_reads(*s.step, s.visited, t, 3, s.provenance_before.get()) : MemoryReads{};
    const bool selectable = !reads.empty();
    if (selectable) {
      ImGui::Separator();
      ImGui::Text(reads.predicted ? "predicted at this step, drawing on the memory (%s):" : "read from memory (%s):",
                  reads.how.c_str());
      for (const auto& r : reads.top) memory_read_lines(doc, reads, r);
    }
    if (!ctx.preview && selectable)
      ImGui::TextDisabled(t == selected_token_ ? "click: clear the selection" : "click: select it (what it read stays shown)");
    else if (!ctx.preview)
      ImGui::TextDisabled("click: go to segment %lld", static_cast<long long>(seg));
    ImGui::EndTooltip();
    if (!ctx.preview && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      if (selectable) {
        selected_token_ = t == selected_token_ ? -1 : t;
      } else {
        selected_token_ = -1;
        ctx.control.jump(seg);
      }
    }
  }
  ImGui::EndChild();
}

void DocumentPanel::memory_read_lines(const Document& doc, const MemoryReads& reads, const MemoryRead& r) {
  if (r.token >= 0) {
    ImGui::Text("  %s #%lld '%s': %.4f", reads.entry_name.c_str(), static_cast<long long>(r.token),
                token_text(doc, r.token).c_str(), r.weight);
    return;
  }
  std::string held;
  for (const auto& h : r.holds) {
    if (h.token < 0 || h.token >= doc.size()) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s#%lld '%s' %.3f", held.empty() ? "" : ", ", static_cast<long long>(h.token),
                  token_text(doc, h.token).c_str(), h.weight);
    held += buf;
  }
  if (std::isfinite(r.initial_share) && r.holds.empty())
    ImGui::Text("  %s %d: %.4f  (held: the initial memory, %.0f%%)", reads.entry_name.c_str(), r.entry, r.weight,
                100.f * r.initial_share);
  else if (!held.empty())
    ImGui::Text("  %s %d: %.4f  held %s", reads.entry_name.c_str(), r.entry, r.weight, held.c_str());
  else
    ImGui::Text("  %s %d: %.4f", reads.entry_name.c_str(), r.entry, r.weight);
}

float DocumentPanel::loss_tint_position(float loss_nats) {
  if (!std::isfinite(loss_nats)) return NAN;
  const float level = std::floor(std::clamp(loss_nats / kMaxLossScale, 0.f, 1.f) * 16.f) / 16.f;  // runs stay long
  return kLossTintFloor + (1.f - kLossTintFloor) * level;
}

}  // namespace mnemo::app
