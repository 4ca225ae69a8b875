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

// One draw of the panel: what the header chose (the tint's entry and scale, the selected
// token's reads) and the grid the text is laid out on (font metrics, columns). The rows of
// the layout (DocumentPanel::row_prefix_) are cached per document and width; the paint
// functions below draw only the visible rows from it.
struct DocumentFrame {
  const PublishedView* s = nullptr;
  const ViewSource* info = nullptr;
  const Document* doc = nullptr;
  int64_t L = 1, cur_first = -1, cur_last = -1;  // segment length, the current segment's tokens
  int tint = DocumentPanel::kTintVisited;
  // The slot-effect tint: the entry shown, its ablation and colour scale (fx null: none).
  const SlotEffects* fx = nullptr;
  int fx_entry = -1, fx_ablation = 0;
  float fx_scale = 1.f;
  // The provenance tint: the slot shown and its largest token share (prov null: none).
  const ProvenanceState* prov = nullptr;
  int prov_slot = -1;
  float prov_max = 0.f;
  MemoryReads sel;  // the selected token's memory reads (empty: none)
  // The grid: font, cell width, row height, the font of stacked hex digits, the gutter.
  ImFont* font = nullptr;
  ImFont* small = nullptr;
  float fs = 0.f, cw = 0.f, row_h = 0.f, gutter_w = 0.f;
  int cols = 8;
};

namespace {

// The colour scales of the tints (one lookup table each, built once per draw).
struct TintLuts {
  ui::ColorLut loss{viz::Colormap::Magma};
  ui::ColorLut prov;
  ui::ColorLut diverging{viz::Colormap::Diverging};
  explicit TintLuts(viz::Colormap seq) : prov(seq) {}
};

// One visual row of the text on screen: tokens [start, end) at height y, text from x0.
struct RowSpan {
  int64_t start = 0, end = 0;
  float y = 0.f, x0 = 0.f;
};

// The background of token t: the tint's colour, else the current segment's highlight, else
// the visited segments' (0: none).
ImU32 tint_colour(const DocumentFrame& f, const TintLuts& luts, int64_t t) {
  const PublishedView& s = *f.s;
  const int64_t seg = t / f.L;
  // A provenance tint wins over the current segment's highlight (whose start stays marked
  // by the amber bar): the current segment is where most of a fresh slot comes from.
  if (f.prov && f.prov_slot >= 0) {
    const float w = f.prov->at(f.prov_slot, t);
    if (w > 0.f && f.prov_max > 0.f) {
      const float q = std::ceil(std::min(1.f, w / f.prov_max) * 16.f) / 16.f;  // 16 levels: runs stay long
      return (luts.prov.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
    }
    return 0u;
  }
  // So does the loss tint (the loss of the current segment's tokens is what one steps to see).
  if (f.tint == DocumentPanel::kTintLoss) {
    const float q = DocumentPanel::loss_tint_position(s.token_loss(t));
    if (std::isfinite(q)) return (luts.loss.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
  }
  if (f.fx && f.fx_entry >= 0) {
    const float bits = f.fx->token_bits(static_cast<size_t>(f.fx_ablation), f.fx_entry, t);
    if (std::isfinite(bits)) {
      const float u = std::clamp(0.5f - 0.5f * bits / f.fx_scale, 0.f, 1.f);
      return (luts.diverging.at(std::round(u * 16.f) / 16.f) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
    }
  }
  if (f.tint == DocumentPanel::kTintBenefit) {
    const TokenLossAt l = token_loss_at(s.visited, f.L, t);
    const float bits = (l.loss_reset - l.loss) / std::log(2.f);
    if (std::isfinite(bits)) {
      const float u = std::clamp(0.5f - 0.5f * bits / DocumentPanel::kBenefitScale, 0.f, 1.f);
      const float q = (std::round(u * 16.f)) / 16.f;  // 17 levels, 0.5 (no difference) among them
      return (luts.diverging.at(q) & 0x00FFFFFFu) | IM_COL32(0, 0, 0, 200);
    }
  }
  if (t >= f.cur_first && t < f.cur_last) return kCurrent;
  return s.is_visited(seg) ? kVisited : 0u;
}

// Gutter: the segment that starts in this row (or the row's segment on a line start).
void paint_gutter(ImDrawList* dl, const DocumentFrame& f, const RowSpan& row, float origin_x) {
  const int64_t first_seg = (row.start + f.L - 1) / f.L;
  if (first_seg * f.L < row.end) {
    char gutter_buf[32];
    std::snprintf(gutter_buf, sizeof gutter_buf, "%lld", static_cast<long long>(first_seg));
    dl->AddText(f.font, f.fs, ImVec2(origin_x, row.y + 1.f), kGutter, gutter_buf);
  }
}

// Backgrounds, merged into runs of equal colour.
void paint_backgrounds(ImDrawList* dl, const DocumentFrame& f, const TintLuts& luts, const RowSpan& row) {
  ImU32 run_col = 0;
  int64_t run_start = row.start;
  for (int64_t t = row.start; t <= row.end; ++t) {
    const ImU32 c = t < row.end ? tint_colour(f, luts, t) : ~0u;
    if (t == row.end || c != run_col) {
      if (run_col != 0 && t > run_start)
        dl->AddRectFilled(ImVec2(row.x0 + static_cast<float>(run_start - row.start) * f.cw, row.y),
                          ImVec2(row.x0 + static_cast<float>(t - row.start) * f.cw, row.y + f.row_h - 1.f), run_col);
      run_col = c;
      run_start = t;
    }
  }
}

// Token boundaries (underlines) and segment boundaries (bars).
void paint_boundaries(ImDrawList* dl, const DocumentFrame& f, const RowSpan& row) {
  for (int64_t t = row.start; t < row.end; ++t) {
    const float x = row.x0 + static_cast<float>(t - row.start) * f.cw;
    dl->AddLine(ImVec2(x + 1.f, row.y + f.fs + 2.f), ImVec2(x + f.cw - 1.f, row.y + f.fs + 2.f), kUnderline);
    if (t % f.L == 0) dl->AddLine(ImVec2(x, row.y), ImVec2(x, row.y + f.row_h - 1.f), kBoundary, 2.f);
  }
}

// A byte that is not UTF-8 text: its two hex digits stacked on a tinted cell, each as large as
// the row allows (the tooltip and the legend say it is a byte that is not UTF-8: \xHH).
void paint_hex_byte(ImDrawList* dl, const DocumentFrame& f, const std::string& hex, float hx, float y) {
  ImFont* small = f.small;
  const float hs = std::min(small->FontSize, 0.5f * (f.row_h - 1.f));
  dl->AddRectFilled(ImVec2(hx + 0.5f, y + 0.5f), ImVec2(hx + f.cw - 0.5f, y + f.row_h - 0.5f), kEscapeBg, 2.f);
  const char d0[2] = {hex[0], 0}, d1[2] = {hex[1], 0};
  const float top = y + 0.5f * (f.row_h - 2.f * hs) - 0.5f;
  dl->AddText(small, hs, ImVec2(hx + 0.5f * f.cw - small->CalcTextSizeA(hs, FLT_MAX, 0.f, d0).x * 0.5f, top), kEscape, d0);
  dl->AddText(small, hs, ImVec2(hx + 0.5f * f.cw - small->CalcTextSizeA(hs, FLT_MAX, 0.f, d1).x * 0.5f, top + hs),
              kEscape, d1);
}

// A character no loaded font has (until the fallback font is merged in, or where it has none
// either): its code point in hex across its `span` cells, never "?".
void paint_missing_glyph(ImDrawList* dl, const DocumentFrame& f, char32_t cp, int span, float hx, float y) {
  ImFont* small = f.small;
  char code[12];
  std::snprintf(code, sizeof code, "%X", static_cast<unsigned>(cp));
  const float room = static_cast<float>(span) * f.cw - 2.f;
  float hs = small->FontSize;
  const float w = small->CalcTextSizeA(hs, FLT_MAX, 0.f, code).x;
  if (w > room) hs *= room / w;
  const float tw = small->CalcTextSizeA(hs, FLT_MAX, 0.f, code).x;
  dl->AddRect(ImVec2(hx + 0.5f, y + 1.5f), ImVec2(hx + static_cast<float>(span) * f.cw - 0.5f, y + f.row_h - 1.5f), kDim, 2.f);
  dl->AddText(small, hs, ImVec2(hx + 0.5f * (static_cast<float>(span) * f.cw - tw), y + 0.5f * (f.row_h - hs)), kDim, code);
}

// The selected token (yellow) and what the memory entries it read held (cyan), then a tour's
// highlighted token: outlined.
void paint_outlines(ImDrawList* dl, const DocumentFrame& f, const RowSpan& row, const std::vector<int64_t>& held,
                    int64_t selected, int64_t highlight) {
  const float y = row.y, cw = f.cw, row_h = f.row_h;
  const float olw = std::max(1.f, ImGui::GetFontSize() / 15.f);
  for (int64_t h : held)
    if (h >= row.start && h < row.end) {
      const float hx = row.x0 + static_cast<float>(h - row.start) * cw;
      dl->AddRect(ImVec2(hx, y), ImVec2(hx + cw, y + row_h - 1.f), IM_COL32(0, 220, 230, 255), 0.f, 0, 2.f * olw);
    }
  if (!f.sel.empty() && selected >= row.start && selected < row.end) {
    const float hx = row.x0 + static_cast<float>(selected - row.start) * cw;
    dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(255, 214, 10, 255), 0.f, 0, 2.f * olw);
  }
  if (highlight >= row.start && highlight < row.end) {
    const float hx = row.x0 + static_cast<float>(highlight - row.start) * cw;
    const float lw = std::max(1.f, ImGui::GetFontSize() / 15.f);
    dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(0, 0, 0, 255), 0.f, 0, 4.f * lw);
    dl->AddRect(ImVec2(hx - 1.f, y), ImVec2(hx + cw + 1.f, y + row_h), IM_COL32(255, 70, 70, 255), 0.f, 0, 2.f * lw);
  }
}

// One paragraph a line of `note`, wrapped at spaces: never inside a number ("(1." / "32 %)").
void text_paragraphs(const std::string& note) {
  for (size_t a = 0; a <= note.size();) {
    const size_t b = std::min(note.find('\n', a), note.size());
    ui::text_wrapped_at_spaces(note.substr(a, b - a));
    a = b + 1;
  }
}

}  // namespace

void DocumentPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  if (!s.info || !s.info->doc) {
    ImGui::TextDisabled("No document. Open one with Ctrl+O or drop a file on the window.");
    return;
  }
  DocumentFrame f;
  f.s = &s;
  f.info = s.info.get();
  f.doc = s.info->doc.get();
  f.L = std::max<int64_t>(1, f.info->segment_len);
  f.cur_first = s.position >= 0 ? s.position * f.L : -1;
  f.cur_last = s.position >= 0 ? std::min(f.doc->size(), f.cur_first + f.L) : -1;
  f.tint = tint_;

  // Header: where we are, the notices, the legend and the tint switch, the tint's own
  // controls, the selected token's reads.
  draw_header(ctx, f);
  draw_tint_choice(f);
  if (tint_ == kTintSlotEffect) draw_slot_effect_controls(ctx, f);
  if (tint_ == kTintProvenance) draw_provenance_controls(ctx, f);
  draw_selected_reads(f);
  ui::help_marker(
      "One cell per token (bytes: a character of several bytes spans their cells); underlines mark token\n"
      "boundaries, amber bars segment starts, with the segment's number in the margin.\n"
      "Hover a token for its id, bytes and loss; click one of the current segment to see what it read\n"
      "from the memory and what that memory held (outlined) - for Memformer also one of the segment the\n"
      "step predicts, through the decoder; click another to go to its segment.");

  // The text: laid out (cached per document and width), scrolled, painted row by row.
  measure_grid(ctx, f);
  header_end_ = ImGui::GetCursorPosY();
  if (align_text_y_ > header_end_) ImGui::SetCursorPosY(align_text_y_);  // side by side: level with the other column
  align_text_y_ = 0.f;
  const float header_h = ImGui::GetCursorPosY();  // title bar and the lines above the text
  // The height the panel wants, measured also when the text's child is clipped away below a
  // header taller than the window (BeginChild is false then): a tour's Document strip grows to
  // it, or a header that wrapped a line more (a token's reads) would hide the text for good.
  // The rows are those laid out last (one before any), corrected below once laid out again.
  const int64_t rows_known = row_prefix_.empty() ? 1 : std::max<int64_t>(1, row_prefix_.back());
  wanted_h_ = header_h + static_cast<float>(std::min<int64_t>(rows_known, 100000)) * f.row_h + 2.f * ImGui::GetStyle().WindowPadding.y;
  if (!ImGui::BeginChild("##doctext", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar)) {
    ImGui::EndChild();
    return;
  }
  f.cols = std::max(8, static_cast<int>((ImGui::GetContentRegionAvail().x - f.gutter_w) / f.cw));
  text_rows_ = ImGui::GetWindowHeight() / f.row_h;
  layout_rows(f);
  follow_scroll(ctx, f);
  const int64_t total_rows = row_prefix_.back();
  wanted_h_ = header_h + static_cast<float>(std::min<int64_t>(total_rows, 100000)) * f.row_h + 2.f * ImGui::GetStyle().WindowPadding.y;
  const int64_t hover_token = paint_rows(ctx, f);
  // Padding under the last row, so the largest scroll shows whole rows (follow_scroll).
  ImGui::Dummy(ImVec2(f.gutter_w + static_cast<float>(f.cols) * f.cw, std::fmod(ImGui::GetWindowHeight(), f.row_h)));
  if (hover_token >= 0) hover_and_click(ctx, f, hover_token);
  ImGui::EndChild();
}

void DocumentPanel::draw_header(PanelContext& ctx, DocumentFrame& f) {
  const ViewSource& info = *f.info;
  const Document& doc = *f.doc;
  ImGui::Text("%lld tokens, %lld segments of %lld", static_cast<long long>(doc.size()),
              static_cast<long long>(info.num_segments), static_cast<long long>(f.L));
  export_button(ctx, PanelId::kDocument);
  // Checked twice a second (a stat of the file), not every frame.
  if (const double now = ImGui::GetTime(); &doc != changed_doc_ || now - changed_checked_at_ >= 0.5) {
    changed_ = changed_notice(doc);
    changed_doc_ = &doc;
    changed_checked_at_ = now;
  }
  const ImVec4 red(1.f, 0.35f, 0.3f, 1.f), amber(1.f, 0.73f, 0.03f, 1.f);
  if (!changed_.empty() && ctx.compact) {
    ui::text_one_line(changed_, red);
  } else if (!changed_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, red);
    ImGui::TextWrapped("%s", changed_.c_str());
    ImGui::PopStyleColor();
  }
  if (const std::string note = notice(info); !note.empty() && ctx.compact) {
    // Side by side: one line, the whole notice on hover (it said so in 3 to 8 lines of a half-width column).
    ui::text_one_line(note, amber);
  } else if (!note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, amber);
    text_paragraphs(note);
    ImGui::PopStyleColor();
  }
}

// The legend of the tint shown, the tint switch, and the benefit tint's total.
void DocumentPanel::draw_tint_choice(DocumentFrame& f) {
  const PublishedView& s = *f.s;
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
  f.tint = tint_;  // the switch may have changed it this frame
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
}

// Slot effects (docs/gui.md#slot-effects): the selected entry's effect on the shown step's
// predictions, computed by the worker on request.
void DocumentPanel::draw_slot_effect_controls(PanelContext& ctx, DocumentFrame& f) {
  const PublishedView& s = *f.s;
  if (s.slot_effects && s.step && s.slot_effects->segment == s.step->segment && !s.slot_effects->empty())
    f.fx = s.slot_effects.get();
  const SlotEffects* fx = f.fx;
  if (!s.step) {
    ImGui::TextDisabled("step a segment, then compute what each memory entry did for its predictions");
    return;
  }
  if (!fx) {
    if (ctx.control.busy()) {
      ImGui::TextDisabled("computing...");
    } else if (!ctx.preview && ImGui::SmallButton("compute slot effects")) {
      ctx.control.compute_slot_effects();
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Steps segment %lld again with each memory entry removed (reset to the initial memory, and\n"
                        "zeroed), on the model's thread; a model without memory has none",
                        static_cast<long long>(s.step->segment));
    return;
  }
  f.fx_ablation = std::max(0, fx->ablation("reset"));
  f.fx_entry = effect_entry(*fx, ctx.vm.selected_slot(), chosen_effect_entry_);
  f.fx_scale = fx->scale(static_cast<size_t>(f.fx_ablation));
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.f);
  int shown = f.fx_entry;
  if (ImGui::InputInt("##entry", &shown)) {
    shown = std::max(0, std::min(shown, static_cast<int>(fx->entries()) - 1));
    chosen_effect_entry_ = shown;
    ctx.vm.select_slot(shown);
    f.fx_entry = effect_entry(*fx, ctx.vm.selected_slot(), chosen_effect_entry_);
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The memory entry whose effect tints the text; selecting a slot in any panel does the same");
  ImGui::SameLine();
  ui::colormap_strip(viz::Colormap::Diverging);
  const std::string& label = fx->labels[static_cast<size_t>(f.fx_entry)];
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Bits a token costs more without %s (reset to the initial memory): +%.2f (blue, it helped) .. "
                      "0 (white) .. -%.2f (red, it hurt)",
                      label.c_str(), f.fx_scale, f.fx_scale);
  const size_t a = static_cast<size_t>(f.fx_ablation);
  char line[256];
  std::snprintf(line, sizeof line,
                "%s saved %+.2f bits on segment %lld's predictions; every entry at once %+.2f, the single entries' "
                "sum %+.2f (they need not add up)",
                label.c_str(), fx->entry_bits(a, f.fx_entry), static_cast<long long>(fx->segment), fx->all_entries_bits(a),
                fx->sum_of_entries(a));
  ui::text_wrapped_at_spaces(line);
  if (!fx->entries_removed) ImGui::TextDisabled("segment 0 starts from the initial memory: nothing written to remove");
}

// Provenance of the selected slot (docs/gui.md#provenance): a second colour scale.
void DocumentPanel::draw_provenance_controls(PanelContext& ctx, DocumentFrame& f) {
  const PublishedView& s = *f.s;
  if (!s.provenance) {
    ImGui::TextDisabled("%s", !s.provenance_note.empty() ? s.provenance_note.c_str() : "Provenance: step a segment first.");
    return;
  }
  const ProvenanceState* prov = f.prov = s.provenance.get();
  int prov_slot = ctx.vm.selected_slot();
  if (prov_slot < 0 || prov_slot >= prov->slots) prov_slot = -1;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.f);
  int shown = prov_slot >= 0 ? prov_slot : chosen_slot_;
  if (ImGui::InputInt("entry", &shown)) {
    shown = std::max(0, std::min(shown, prov->slots - 1));
    chosen_slot_ = shown;
    ctx.vm.select_slot(shown);
    prov_slot = ctx.vm.selected_slot();
  }
  f.prov_slot = prov_slot;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The memory entry (slot) whose provenance tints the text; selecting one anywhere does the same");
  if (prov_slot < 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("select a slot (click a row of any slot panel, or type one)");
    return;
  }
  f.prov_max = prov->row_max(prov_slot);
  ImGui::SameLine();
  // Legend: the sequential scale from 0 to the slot's largest token share.
  ui::colormap_strip(ctx.seq_cmap);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Share of slot %d's content from each token: 0 (dark) .. %.4f (yellow, its largest)", prov_slot,
                      f.prov_max);
  ImGui::SameLine();
  ImGui::Text("0..%.3g   initial memory %.1f%%", f.prov_max, 100.f * prov->initial[prov_slot]);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Share of slot %d's content still from the initial memory m_0 (before the first segment)", prov_slot);
  if (prov->other[prov_slot] > 0.0005f) {
    ImGui::SameLine();
    ImGui::Text("other %.1f%%", 100.f * prov->other[prov_slot]);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Content from inputs that are not document tokens: Memformer's cls tokens, trxl-rmt's token cache");
  }
}

// The selected token's memory reads (app/figures/memory_reads.h): what it read most and what
// those entries held. Kept while the shown step's segment holds the token.
void DocumentPanel::draw_selected_reads(DocumentFrame& f) {
  const PublishedView& s = *f.s;
  const Document& doc = *f.doc;
  if (selected_info_ != 0 && selected_info_ != f.info->id) selected_token_ = -1;  // another document or model
  selected_info_ = f.info->id;
  if (selected_token_ >= 0 && s.step) f.sel = memory_reads(*s.step, s.visited, selected_token_, 3, s.provenance_before.get());
  held_.clear();
  const MemoryReads& sel = f.sel;
  if (sel.empty()) return;
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

// The grid's font metrics and the gutter, wide enough for the last segment's number.
void DocumentPanel::measure_grid(PanelContext& ctx, DocumentFrame& f) {
  f.font = ctx.mono ? ctx.mono : ImGui::GetFont();
  f.fs = f.font->FontSize;
  f.cw = f.font->CalcTextSizeA(f.fs, FLT_MAX, 0.f, "M").x;
  f.row_h = f.fs + 5.f;
  // The hex digits of escaped bytes and glyph-less code points: a font rasterized small.
  f.small = ctx.small_mono ? ctx.small_mono : f.font;
  char gutter_buf[32];
  std::snprintf(gutter_buf, sizeof gutter_buf, "%lld ", static_cast<long long>(std::max<int64_t>(f.info->num_segments - 1, 0)));
  f.gutter_w = f.font->CalcTextSizeA(f.fs, FLT_MAX, 0.f, gutter_buf).x + 4.f;
}

// The layout: the visual rows before each line of the document at f.cols columns (a line
// wraps into ceil(length / cols) rows, at least one), recomputed only when the document or
// the width changes.
void DocumentPanel::layout_rows(const DocumentFrame& f) {
  const auto& ls = f.info->line_starts;
  const int64_t n_lines = static_cast<int64_t>(ls.size());
  const int cols = f.cols;
  if (layout_info_ == f.info->id && layout_cols_ == cols && row_prefix_.size() == ls.size() + 1) return;
  row_prefix_.assign(ls.size() + 1, 0);
  for (int64_t i = 0; i < n_lines; ++i) {
    const int64_t len = (i + 1 < n_lines ? ls[static_cast<size_t>(i + 1)] : f.doc->size()) - ls[static_cast<size_t>(i)];
    row_prefix_[static_cast<size_t>(i + 1)] =
        static_cast<uint32_t>(row_prefix_[static_cast<size_t>(i)] + std::max<int64_t>(1, (len + cols - 1) / cols));
  }
  layout_info_ = f.info->id;
  layout_cols_ = cols;
}

int64_t DocumentPanel::row_of_token(const DocumentFrame& f, int64_t t) const {
  const auto& ls = f.info->line_starts;
  const int64_t line = static_cast<int64_t>(std::upper_bound(ls.begin(), ls.end(), t) - ls.begin()) - 1;
  return int64_t{row_prefix_[static_cast<size_t>(line)]} + (t - ls[static_cast<size_t>(line)]) / f.cols;
}

int64_t DocumentPanel::token_of_row(const DocumentFrame& f, int64_t r) const {
  const auto& ls = f.info->line_starts;
  r = std::max<int64_t>(0, std::min<int64_t>(r, int64_t{row_prefix_.back()} - 1));
  const int64_t line =
      static_cast<int64_t>(std::upper_bound(row_prefix_.begin(), row_prefix_.end(), static_cast<uint32_t>(r)) - row_prefix_.begin()) - 1;
  return std::min<int64_t>(ls[static_cast<size_t>(line)] + (r - row_prefix_[static_cast<size_t>(line)]) * f.cols, f.doc->size() - 1);
}

// Scrolling: the current segment brought into view when it changes, a tour's highlighted
// token once, and side by side both Document panels on the same token row (ScrollLink).
void DocumentPanel::follow_scroll(PanelContext& ctx, const DocumentFrame& f) {
  const Document& doc = *f.doc;
  const float row_h = f.row_h;
  auto to_row = [row_h](float y) { return std::max(0.f, std::floor(y / row_h + 1e-3f) * row_h); };
  float set_y = -1.f;  // a scroll this draw sets (the top of a row), -1: none
  if (f.s->position != scrolled_to_ || scrolled_info_ != f.info->id) {
    scrolled_to_ = f.s->position;
    scrolled_info_ = f.info->id;
    if (f.cur_first >= 0 && f.cur_first < doc.size()) {
      const float y0 = static_cast<float>(row_of_token(f, f.cur_first)) * row_h;
      const float y1 = static_cast<float>(row_of_token(f, std::max(f.cur_first, f.cur_last - 1)) + 1) * row_h;
      const float top = ImGui::GetScrollY(), h = ImGui::GetWindowHeight();
      if (y0 < top || y1 > top + h) set_y = to_row(y0 - 0.3f * h);
    }
  }
  if (ctx.highlight_token != scrolled_highlight_) {
    scrolled_highlight_ = ctx.highlight_token;
    if (ctx.highlight_token >= 0 && ctx.highlight_token < doc.size()) {
      const float y0 = static_cast<float>(row_of_token(f, ctx.highlight_token)) * row_h;
      const float top = ImGui::GetScrollY(), h = ImGui::GetWindowHeight();
      if (y0 < top || y0 + row_h > top + h) set_y = to_row(y0 - 0.3f * h);
    }
  }
  // Whole rows: the text scrolls by rows, so its top row is never cut in half under the header
  // lines above it (the wheel's or the scrollbar's position goes to the next row the way it
  // moved, so a small step still moves; not while the scrollbar is dragged). The text's end is
  // padded (paint_rows' caller) so the last scroll position is a whole row too.
  float scroll_y = ImGui::GetScrollY();
  if (set_y >= 0.f) {
    scroll_y = set_y;
  } else if (!ImGui::IsAnyItemActive()) {
    const float r = scroll_y / row_h, last = snap_last_y_;
    float snapped = scroll_y > last + 0.5f ? std::ceil(r - 1e-3f) : scroll_y < last - 0.5f ? std::floor(r + 1e-3f) : std::round(r);
    snapped = std::min(snapped * row_h, std::floor(ImGui::GetScrollMaxY() / row_h + 1e-3f) * row_h);
    if (std::fabs(snapped - scroll_y) > 0.5f) set_y = scroll_y = std::max(0.f, snapped);
  }
  if (set_y >= 0.f) ImGui::SetScrollY(set_y);
  snap_last_y_ = scroll_y;
  // Side by side: a move by the other side is followed; a move of this one (the user's, or
  // the step's scroll above) is passed on.
  const bool any = !f.info->line_starts.empty() && doc.size() > 0;
  top_token_ = any ? token_of_row(f, static_cast<int64_t>(scroll_y / row_h + 1e-3f)) : -1;
  if (!link_ || !any) return;
  if (link_->version != link_seen_ && link_->side != link_side_ && link_->token >= 0 && link_->token < doc.size()) {
    const float y = to_row((static_cast<float>(row_of_token(f, link_->token)) + link_->row_frac) * row_h + 0.5f * row_h);
    ImGui::SetScrollY(y);
    link_last_y_ = snap_last_y_ = y;
    link_seen_ = link_->version;
  } else if (std::fabs(scroll_y - link_last_y_) > 0.5f) {
    const int64_t r = static_cast<int64_t>(scroll_y / row_h + 1e-3f);
    link_->token = token_of_row(f, r);
    link_->row_frac = scroll_y / row_h - static_cast<float>(r);
    link_->side = link_side_;
    link_seen_ = ++link_->version;
    link_last_y_ = scroll_y;
  }
}

// Paints the visible rows of the layout; returns the token under the pointer (-1: none).
int64_t DocumentPanel::paint_rows(PanelContext& ctx, const DocumentFrame& f) {
  const auto& ls = f.info->line_starts;
  const int64_t n_lines = static_cast<int64_t>(ls.size());
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  // The top of the first row with a visible pixel (tests: never above the text area's top).
  const float clip_top = ImGui::GetWindowPos().y;
  first_row_top_ = origin.y + std::max(0.f, std::floor((clip_top - origin.y) / f.row_h + 1e-3f)) * f.row_h;
  row_h_ = f.row_h;
  const TintLuts luts(ctx.seq_cmap);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered_window = ImGui::IsWindowHovered();
  int64_t hover_token = -1;
  std::string text, dim;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(std::min<int64_t>(row_prefix_.back(), INT32_MAX)), f.row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const int64_t line =
          static_cast<int64_t>(std::upper_bound(row_prefix_.begin(), row_prefix_.end(), static_cast<int64_t>(r)) - row_prefix_.begin()) - 1;
      const int64_t line_end = line + 1 < n_lines ? ls[static_cast<size_t>(line + 1)] : f.doc->size();
      RowSpan row;
      row.start = ls[static_cast<size_t>(line)] + (r - row_prefix_[static_cast<size_t>(line)]) * f.cols;
      row.end = std::min<int64_t>(row.start + f.cols, line_end);
      row.y = origin.y + static_cast<float>(r) * f.row_h;
      row.x0 = origin.x + f.gutter_w;
      paint_gutter(dl, f, row, origin.x);
      paint_backgrounds(dl, f, luts, row);
      paint_boundaries(dl, f, row);
      paint_glyphs(dl, f, row.start, row.end, ImVec2(row.x0, row.y), text, dim);
      paint_outlines(dl, f, row, held_, selected_token_, ctx.highlight_token);
      if (hovered_window && mouse.y >= row.y && mouse.y < row.y + f.row_h && mouse.x >= row.x0) {
        const int64_t c = static_cast<int64_t>((mouse.x - row.x0) / f.cw);
        if (c < row.end - row.start) hover_token = row.start + c;
      }
    }
  }
  return hover_token;
}

// The row's text: two strings (normal and dim glyphs), one cell per token; escaped bytes,
// glyph-less and wide characters drawn cell by cell. `text` and `dim` are scratch space.
void DocumentPanel::paint_glyphs(ImDrawList* dl, const DocumentFrame& f, int64_t start, int64_t end, ImVec2 at,
                                 std::string& text, std::string& dim) {
  const Document& doc = *f.doc;
  ImFont* font = f.font;
  const float fs = f.fs, cw = f.cw, y = at.y;
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
    const float hx = at.x + static_cast<float>(t - start) * cw;
    const ImFontGlyph* glyph = glyph_of(font, c.cp);  // one lookup per cell (drawn every frame)
    const bool no_glyph = c.cp != 0 && !glyph;
    if (no_glyph) note_missing_glyph(c.cp);
    if (!c.hex.empty()) {
      paint_hex_byte(dl, f, c.hex, hx, y);
      text += ' ';
      dim += ' ';
    } else if (no_glyph) {
      paint_missing_glyph(dl, f, c.cp, span, hx, y);
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
  dl->AddText(font, fs, ImVec2(at.x, y + 1.f), kText, text.data(), text.data() + text.size());
  dl->AddText(font, fs, ImVec2(at.x, y + 1.f), kDim, dim.data(), dim.data() + dim.size());
}

// The hovered token's tooltip (id, bytes, loss, provenance, memory reads); a click selects a
// token the shown step read with (again: clears it) or goes to the token's segment.
void DocumentPanel::hover_and_click(PanelContext& ctx, const DocumentFrame& f, int64_t t) {
  const PublishedView& s = *f.s;
  const Document& doc = *f.doc;
  const int64_t L = f.L, seg = t / L;
  ImGui::BeginTooltip();
  ImGui::Text("token #%lld  (segment %lld, position %lld)", static_cast<long long>(t), static_cast<long long>(seg),
              static_cast<long long>(t - seg * L));
  ImGui::Text("id %lld, bytes %s  '%s'", static_cast<long long>(doc.id(t)), describe_bytes(doc, t).c_str(),
              token_text(doc, t).c_str());
  token_loss_lines(s, L, t);
  if (f.prov && f.prov_slot >= 0) {
    const float w = f.prov->at(f.prov_slot, t);
    ImGui::Text("provenance of slot %d: %.6f (%.2f%% of its content)", f.prov_slot, w, 100.f * w);
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

// The tooltip's loss lines of token t: its loss and what the memory saved, or why it has none.
void DocumentPanel::token_loss_lines(const PublishedView& s, int64_t L, int64_t t) {
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
