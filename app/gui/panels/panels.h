// The desktop app's panels, one class per file in app/gui/panels/ (docs/architecture.md#conventions). A panel draws
// its content into the current ImGui window (the shell owns Begin/End, so the gallery can
// draw the same panels into child regions) from a PanelContext, and keeps only
// presentation state of its own (textures, sort order, scroll); the selected slot and the
// thresholds live in the shared ViewModel. Contract for every draw(): call between
// ImGui::NewFrame and ImGui::Render, inside a window; it never blocks on the model.
#pragma once
#include "app/figures/memory_reads.h"
#include "app/figures/qa.h"
#include "app/gui/model/controller.h"
#include "app/view/published_view.h"
#include "app/gui/model/view_model.h"
#include "app/gui/panels/widgets/heatmap.h"
#include "app/gui/panels/widgets/texture.h"

#include <imgui.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace mnemo::app {

// Every panel draws into the current window from a PanelContext (the registry makes them:
// app/gui/panels/registry.h).
struct PanelContext;
class Panel {
 public:
  virtual ~Panel() = default;
  virtual void draw(PanelContext& ctx) = 0;
  // The height in px of the panel's map (its heatmap's plot area) last frame; 0 when it drew
  // none (a panel without a map, or nothing stepped yet). The layout tests and the tour's
  // screen checks read it: a squeezed map is a sliver however tall its window is.
  float map_height() const { return map_h_; }

 protected:
  float map_h_ = 0.f;
};

// A panel is its place in the registry (app/gui/panels/registry.cpp, View-menu order). The
// values named here are the panels the shell refers to by name, in registry order
// (tests/gui/test_registry.cpp checks each against its entry's file name); a panel the
// shell does not name needs no value: it is PanelId(its index).
enum class PanelId : int {
  kControls, kDocument, kWriterAttention, kTimeline, kSlotTypes, kForgetting, kMemory, kAttention,
  kMtnMemory, kHashBuckets, kDashboard, kGallery
};
// How many panels the registry has.
int panel_count();
// From the registry (app/gui/panels/registry.h): the window title (also its imgui.ini key),
// the base name of its exported files, and whether it applies to the shown model
// (Memformer panels to "memformer" and to no model yet, Attention to the RMT /
// Transformer-XL / MTN families, Hash buckets to "linear": "hashed", MTN memory to "mtn");
// when not, *why (if non-null) says what the panel needs.
const char* panel_title(PanelId id);
const char* panel_file_name(PanelId id);
bool panel_applies(PanelId id, const PublishedView& s, std::string* why = nullptr);

// Play state shared by the Controls panel and the keyboard (Space).
struct Transport {
  bool playing = false;
  float speed = 4.f;  // segments per second
};

// What panels ask of the shell (handled after the frame's panels are drawn).
struct ShellRequests {
  bool open_dialog = false;        // the Ctrl+O dialog
  int export_panel = -1;           // a PanelId to export
  std::vector<std::string> errors; // popups
};

struct PanelContext {
  const PublishedView& view;  // what is drawn (not a training session folder)
  ViewModel& vm;
  ui::TextureApi& textures;
  Controller& control;
  Transport& transport;
  ShellRequests& requests;
  ImFont* mono = nullptr;  // document font (monospace)
  bool preview = false;    // drawn in the gallery: no model commands, no export
  // Sequential colour map of the heatmaps (Viridis; Gray in presenter mode's high contrast).
  viz::Colormap seq_cmap = viz::Colormap::Viridis;
  // Side by side with "same colour scale": the largest weight of both models' maps, so both
  // columns share 0..shared_max (NaN: each map its own scale).
  float shared_max = NAN;
  // A token to outline in the Document panel (a tour stop's selection; -1 none).
  int64_t highlight_token = -1;
  // Monospace at 62 % of the size, rasterized at that size (crisp, not a scaled-down bitmap):
  // the hex digits of bytes that are not UTF-8 and of code points without a glyph. Null: mono, scaled.
  ImFont* small_mono = nullptr;
  // Side by side: the panel is one of two columns, so a long notice takes one line (the whole
  // of it on hover) and leaves the rows to the text (docs/gui.md#side-by-side).
  bool compact = false;
};

// Slot-type colours shared by every panel (retain blue, mix grey, overwrite red, as the CLI figures).
ImU32 slot_type_color(SlotType t, int alpha = 255);
// A small "Export…" button at the right end of the current line (no-op in previews).
void export_button(PanelContext& ctx, PanelId id);
// In a table of slots drawn in the order `rows` (row_h pixels each), scrolls the slot
// selected elsewhere into view — once per selection change (*scrolled remembers which).
void scroll_selected_row_into_view(const PanelContext& ctx, const std::vector<int>& rows, float row_h, uint64_t* scrolled);
// Tooltip lines for a slot (its type and self mass) appended to the current tooltip.
void slot_tooltip_lines(const PanelContext& ctx, int slot);
// The first cell of a slot table's row: the slot's number, selectable across the row (a
// click toggles the slot's selection). Returns whether the mouse is over it.
bool slot_row_label(PanelContext& ctx, int slot);
// A value cell of a slot table: 4 decimals, NaN / Inf spelt out in magenta.
void value_cell(float x);

class ControlsPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  // The status lines of a step, composed once per step (not per frame).
  struct Status {
    std::shared_ptr<const StepData> step;
    std::shared_ptr<const ViewSource> info;
    std::string position, loss_label, loss_value, loss_tip, none, warning, scored;
    bool scored_any = false;
  };
  void sync_fields(const ViewSource& info);
  void compose_status(const PublishedView& s);
  void draw_transport(PanelContext& ctx, int64_t n);
  void draw_stepping(const Stepping& st);
  void draw_progress(PanelContext& ctx);
  void draw_status(const PublishedView& s, int64_t n);
  void draw_document_row(PanelContext& ctx);
  void draw_model_fields(const PublishedView& s);
  void draw_apply(PanelContext& ctx);
  void draw_checkpoint(PanelContext& ctx);
  Status status_;
  uint64_t synced_info_ = 0;
  // The shown model's config as edited: the fields of model_field_controls() (their members,
  // ranges and tooltips from ModelConfig::fields()) change it; Apply sends it whole.
  ModelConfig edit_;
  uint64_t seed_ = 0;
  std::string checkpoint_;
  std::string other_fields_;  // other_model_fields of the synced model (the line under the fields)
  int slider_ = 0;
  bool slider_active_ = false;
};

// Two Document panels that scroll together (side by side, docs/gui.md#side-by-side): where
// the one scrolled last has its top row (the row's first token, and how much of that row is
// scrolled out), and which side moved it; version bumps on every move.
struct ScrollLink {
  int64_t token = -1;
  float row_frac = 0.f;
  int side = -1;
  uint64_t version = 0;
};

struct DocumentFrame;  // one draw of the Document panel: its tint choices and its grid (document.cpp)

class DocumentPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // Scrolls with the other panels on `link` (null: alone); `side` tells the panels apart.
  void link_scroll(ScrollLink* link, int side) {
    link_ = link;
    link_side_ = side;
  }
  // The first token of the top visible text row when last drawn (-1 before).
  int64_t top_token() const { return top_token_; }
  // The text's columns (characters a line) and the rows the text area showed last frame.
  int columns() const { return layout_cols_; }
  float text_rows() const { return text_rows_; }
  // Side by side: where the header above the text ended last frame (window-local y; a notice
  // on one side only makes its header a line taller), and the y the next draw starts the text
  // at when its own header ends higher (one draw; 0: where the header ends). The shell gives
  // both columns the taller header's end, so the two texts' rows line up.
  float header_end() const { return header_end_; }
  void align_text_at(float y) { align_text_y_ = y; }
  // The screen y of the top of the first text row with a visible pixel, and a row's height,
  // when last drawn: the text scrolls by whole rows, so that row starts at the text area's top
  // (below the header), never cut under it.
  float first_row_top() const { return first_row_top_; }
  float row_height() const { return row_h_; }
  // What the cell of token t shows: the character, "" for a space, "\xHH" for a byte that
  // is not UTF-8 text (as the figure axes escape it).
  static std::string cell_text(const Document& doc, int64_t t);
  // Whether token t is a byte inside a valid UTF-8 character that begins at an earlier token
  // (its first cell draws it; a row that starts inside it leaves these cells blank).
  static bool continues_character(const Document& doc, int64_t t);
  // The notice shown above a document that is not text ("" for text).
  static std::string notice(const ViewSource& info);
  // The red line shown when the (memory-mapped) document changed on disk since it was opened;
  // "" when it did not (Document::changed_on_disk).
  static std::string changed_notice(const Document& doc);
  // The loss tint's position on its colour scale (magma) for a loss in nats: 16 levels from
  // kLossTintFloor (loss 0: a dark purple that stands out from the untinted background) to 1
  // (kMaxLossScale nats and more); NaN for no loss (the token is left untinted).
  static float loss_tint_position(float loss_nats);
  static constexpr float kMaxLossScale = 6.f;   // ~ ln(vocabulary): the loss of a uniform guess
  static constexpr float kLossTintFloor = 0.2f;
  // The window height that shows the whole document without scrolling at the width it was
  // last drawn (title bar, header lines and every text row); 0 before the first draw.
  float wanted_height() const { return wanted_h_; }
  // Code points the panel drew but no loaded font has (shown as their hex code meanwhile),
  // each reported once: the app merges them in from the fallback font (ui::load_fonts).
  std::vector<char32_t> take_missing_glyphs();
  static constexpr size_t kMaxMissingGlyphs = 8192;  // bounds the font atlas
  // The token selected by a click in the shown step's segment (-1: none): the panel shows
  // what it read from the memory and outlines what that memory held.
  int64_t selected_token() const { return selected_token_; }
  void select_token(int64_t t) { selected_token_ = t; }

 private:
  // draw() as layout plus paint (document.cpp): the header lines, the grid measured and its rows
  // laid out (cached per document and width), the scroll followed, the visible rows painted.
  void draw_header(PanelContext& ctx, DocumentFrame& f);
  void draw_tint_choice(DocumentFrame& f);
  void draw_slot_effect_controls(PanelContext& ctx, DocumentFrame& f);
  void draw_provenance_controls(PanelContext& ctx, DocumentFrame& f);
  void draw_selected_reads(DocumentFrame& f);
  static void measure_grid(PanelContext& ctx, DocumentFrame& f);
  void layout_rows(const DocumentFrame& f);
  int64_t row_of_token(const DocumentFrame& f, int64_t t) const;
  int64_t token_of_row(const DocumentFrame& f, int64_t r) const;
  void follow_scroll(PanelContext& ctx, const DocumentFrame& f);
  int64_t paint_rows(PanelContext& ctx, const DocumentFrame& f);
  void paint_glyphs(ImDrawList* dl, const DocumentFrame& f, int64_t start, int64_t end, ImVec2 at, std::string& text,
                    std::string& dim);
  void hover_and_click(PanelContext& ctx, const DocumentFrame& f, int64_t t);
  static void token_loss_lines(const PublishedView& s, int64_t L, int64_t t);
  void note_missing_glyph(char32_t cp);
  // Tooltip line of one entry a token read (app/figures/memory_reads.h).
  static void memory_read_lines(const Document& doc, const MemoryReads& reads, const MemoryRead& r);
  int64_t selected_token_ = -1;
  uint64_t selected_info_ = 0;
  std::vector<int64_t> held_;  // the tokens the selected token's entries held (outlined)
  std::set<char32_t> missing_seen_;
  std::vector<char32_t> missing_new_;
  float wanted_h_ = 0.f;
  float header_end_ = 0.f, align_text_y_ = 0.f;
  uint64_t layout_info_ = 0;
  int layout_cols_ = 0;
  float text_rows_ = 0.f;
  std::vector<uint32_t> row_prefix_;  // visual rows before each line (size lines + 1; < 2^32 under kMaxDocumentBytes)
  int64_t scrolled_to_ = -2;
  ScrollLink* link_ = nullptr;
  int link_side_ = 0;
  uint64_t link_seen_ = 0;
  float link_last_y_ = -1.f;
  float snap_last_y_ = 0.f;  // the scroll of the last draw (whole rows: the direction of a move)
  float first_row_top_ = 0.f, row_h_ = 0.f;
  int64_t top_token_ = -1;
  uint64_t scrolled_info_ = 0;
  int64_t scrolled_highlight_ = -1;
  int tint_ = 0;  // 0: visited segments, 1: loss, 2: provenance of the selected memory entry, 3: memory benefit,
                 // 4: the selected memory entry's effect (slot effects)
  int chosen_effect_entry_ = -1;  // the slot-effect tint's entry when none is selected (-1: the most helpful)
  // The changed-on-disk line, its document and when it was last checked (draw()).
  std::string changed_;
  const Document* changed_doc_ = nullptr;
  double changed_checked_at_ = -1.0;
  int chosen_slot_ = 0;

 public:
  enum Tint { kTintVisited = 0, kTintLoss = 1, kTintProvenance = 2, kTintBenefit = 3, kTintSlotEffect = 4 };
  int tint() const { return tint_; }
  void set_tint(int t) { tint_ = t < 0 || t > 4 ? 0 : t; }
  // The entry the slot-effect tint shows: the selected slot when `fx` has it, else the one
  // typed in the panel, else the most helpful (reset ablation); -1 when fx is empty.
  static int effect_entry(const SlotEffects& fx, int selected, int chosen);
  // The benefit tint's colour scale: ±kBenefitScale bits (blue = the memory saved bits).
  static constexpr float kBenefitScale = 2.f;
};

class WriterAttentionPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  ui::HeatmapImage image_;
  ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  int last_head_ = -2;
  // Colour scale: 0..1 by default (a weight's full range, so brightness means the same on
  // every map and step); 0: 0..max, 1: min..max (auto, a choice), 2: 0..1.
  int scale_ = 2, last_scale_ = -1;
  float vmin_ = 0.f, vmax_ = 1.f;

 public:
  // The colour scale drawn last frame, and its text printed beside the map ("colour 0..1").
  float scale_min() const { return vmin_; }
  float scale_max() const { return vmax_; }
  const std::string& scale_text() const { return scale_text_; }

 private:
  std::string scale_text_;
  int last_cmap_ = -1;
  float last_shared_ = -1.f;

 public:
  // The colour scale drawn last (its upper end) and the scale choice (0: 0..max,
  // 1: min..max, 2: 0..1), which side by side keeps equal on both sides.
  float vmax() const { return vmax_; }
  int scale() const { return scale_; }
  void set_scale(int s) { scale_ = s < 0 || s > 2 ? 0 : s; }
  // The colour range an export of `step` uses: the one drawn last when that drew `step`,
  // else 0..1 on the fixed scale and NaN (0..the map's largest) on the others.
  void export_range(const StepData* step, float* lo, float* hi) const {
    const bool drawn = step && step == last_step_.get();
    *lo = drawn ? vmin_ : scale_ == 2 ? 0.f : NAN;
    *hi = drawn ? vmax_ : scale_ == 2 ? 1.f : NAN;
  }
};

class SlotTypesPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // Where the strip's two rows (type, self) were drawn last frame (plot area), for tests.
  ImVec2 strip_min() const { return strip_min_; }
  ImVec2 strip_max() const { return strip_max_; }

 private:
  ImVec2 strip_min_{}, strip_max_{};
  ui::HeatmapImage strip_;
  uint64_t key_ = 0, last_types_ = ~uint64_t{0};
  std::vector<uint8_t> rgba_;
};

class ForgettingPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  SortOrder order_ = SortOrder::kSlot;
  std::vector<int> rows_;
  std::shared_ptr<const StepData> sorted_for_;
  SortOrder sorted_order_ = SortOrder::kSlot;
  uint64_t scrolled_selection_ = 0;
};

class MemoryPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  ui::HeatmapImage image_;
  ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  int sort_column_ = 0;  // 0 slot, 1 norm, 2 drift
  SortOrder order_ = SortOrder::kSlot;
  std::vector<int> rows_;
  std::shared_ptr<const StepData> sorted_for_;
  int sorted_column_ = -1;
  SortOrder sorted_order_ = SortOrder::kSlot;
  std::vector<float> drift_;
  uint64_t scrolled_selection_ = 0;
};

class TimelinePanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // The columns for visited segments (ascending): one per segment, and a gap column (-1)
  // wherever segments were skipped (a jump from 1 to 3 shows 1, gap, 3), so columns never
  // suggest consecutive steps that were not.
  static std::vector<int64_t> columns_of(const std::vector<int64_t>& visited);

 private:
  ui::HeatmapImage image_;
  ui::ColorbarImage colorbar_;
  uint64_t key_ = 0, last_visited_ = ~uint64_t{0}, last_info_ = ~uint64_t{0};
  std::vector<int64_t> segments_;   // column -> segment (-1: a gap for skipped segments)
  std::vector<float> values_;       // slots x columns
  std::vector<std::string> labels_;
  int slots_ = 0;
  int last_cmap_ = -1;
  bool holds_ = true;  // "what this slot holds": the selected slot's top sources per step
  // narrow: two columns (beside the map, or a narrow panel): the initial memory's share ends the sources' flow.
  void draw_holds(PanelContext& ctx, int slot, bool narrow);

 public:
  bool show_holds() const { return holds_; }
  void set_show_holds(bool on) { holds_ = on; }
  // Rows of "what slot N holds" the list showed last frame without scrolling (a table row
  // cut at the bottom does not count); -1 when the list was not drawn (turned off, no
  // provenance, no slot selected).
  int holds_rows_shown() const { return holds_rows_shown_; }

 private:
  int holds_rows_shown_ = -1;
};

// Attention of an RMT-family model over [read | tokens | write] (Transformer-XL: token rows
// over [cache | tokens]; MTN family: its joint layers), one layer and head (or the mean),
// blocks outlined and labelled, hover values, and the block masses as bars.
class AttentionPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  int layer_index() const { return layer_; }  // index into AttentionData::layers
  int head() const { return head_; }          // -1 = mean over heads
  // Clamped to what the shown step has (an out-of-range value falls back to 0 / the mean).
  void select(int layer_index, int head) {
    layer_ = layer_index;
    head_ = head;
  }
  // The memory entry key column `col` of `a` is, which a click there selects: an RMT memory
  // token read ("read", "previous write") or written ("write"), an MTN kept entry ("memory"),
  // the Transformer-XL cache block holding a cache position ("cache": blocks of segment_len
  // positions counted back from the newest, numbered after Transformer-XL + RMT's memory
  // tokens, as core/models/memory_entries.h numbers them; selectable once the slot effects
  // are computed); -1 for a token column (and a cache column when segment_len < 1).
  static int entry_of_column(const AttentionData& a, int col, int64_t segment_len);
  // Where the map was drawn last frame (plot area), for tests that hover and click it.
  ImVec2 map_min() const { return plot_min_; }
  ImVec2 map_max() const { return plot_max_; }

 private:
  // The block masses' legend and one row of bars per layer, at the cursor (below the map, or
  // beside it in a wide short panel).
  void draw_masses(const AttentionData& a, int nm, float line);
  std::vector<int> drawn_;            // indices into mass_names with a bar (some layer has a value)
  std::vector<std::string> legend_;   // their names, as the legend lists them

 public:
  // The block masses the legend listed and the bars drew last frame (a mass n/a on every layer
  // at the shown head is left out of both).
  const std::vector<std::string>& mass_legend() const { return legend_; }

 private:
  ui::HeatmapImage image_;
  ui::ColorbarImage colorbar_;
  ImVec2 plot_min_{}, plot_max_{};
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  int last_layer_ = -2, last_head_ = -2, last_scale_ = -1;
  // Colour scale: 1 (0..1, a weight's full range) by default; 0: 0..max (auto, a choice).
  int layer_ = 0, head_ = -1, scale_ = 1;
  float vmax_ = 1.f;
  std::string scale_text_;

 public:
  // The colour scale drawn last frame, and its text printed beside the map ("colour 0..1").
  float scale_max() const { return vmax_; }
  const std::string& scale_text() const { return scale_text_; }
  // The colour range's top an export of `step` uses: the one drawn last when that drew
  // `step`, else 1 on the fixed 0..1 scale and NaN (0..the map's largest) on 0..max.
  float export_vmax(const StepData* step) const {
    return step && step == last_step_.get() ? vmax_ : scale_ == 1 ? 1.f : NAN;
  }

 private:
  int last_cmap_ = -1;
  float last_shared_ = -1.f;

 public:
  // The colour scale drawn last (its upper end) and the scale choice, as the writer's.
  float vmax() const { return vmax_; }
  int scale() const { return scale_; }
  void set_scale(int s) { scale_ = s < 0 || s > 1 ? 0 : s; }
};

// MemoryFormer hash tables of one projection: heat strip of every table's bucket loads, one
// table's bars against the uniform line, the stats table and the p(z) distribution.
class HashBucketsPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  const std::string& path() const { return path_; }  // selected projection ("" before a step)
  int table() const { return table_; }
  // Selects a projection by group (layer) and index within it; clamped when drawn.
  void select(int group, int projection, int table) {
    group_ = group;
    projection_ = projection;
    table_ = table;
  }

 private:
  ui::HeatmapImage strip_;
  ui::ColorbarImage colorbar_;
  uint64_t key_ = 0;
  std::shared_ptr<const StepData> last_step_;
  std::string last_path_, path_;
  int group_ = 0, projection_ = 0, table_ = 0;
  uint64_t note_key_ = ~uint64_t{0};
  std::string same_tables_note_;  // why the tables look alike (app/figures/hash.h), for key_
};

// The MTN memory as the document's own words: the kept entries (token in context, importance,
// age) beside the document with kept tokens highlighted in their age colour.
class MtnMemoryPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  // One token of the document view, placed by the word wrap.
  struct DocToken {
    std::string text;   // what it shows (a UTF-8 character whole at its first byte's token)
    float x = 0.f, y = 0.f, w = 0.f;
    bool line_break = false;
  };
  // What the step shows, computed once per step (labels, the QA answers) and once per step,
  // width and font (the document's word wrap), never per frame.
  struct Layout {
    std::shared_ptr<const StepData> step;
    std::vector<std::string> cand_labels;
    std::vector<std::pair<int, std::string>> cand_groups;
    QaAnswers qa;
    float width = -1.f, font_size = 0.f;
    const ImFont* font = nullptr;
    std::vector<DocToken> doc;
    float lead = 0.f, line_h = 0.f, height = 0.f;
  };
  void on_step(const std::shared_ptr<const StepData>& step, const Document& doc);
  void layout_document(const StepData& st, const Document& doc, float width);
  void draw_candidates(const StepData& st, const Document& doc);
  int draw_entries(const MtnData& d, const Document& doc);
  void draw_document(PanelContext& ctx, const StepData& st, const Document& doc, int hovered_entry);
  void document_tooltip(PanelContext& ctx, const StepData& st, const Document& doc, int64_t t);

  ui::HeatmapImage strip_;
  uint64_t key_ = 0;
  Layout layout_;
  int hovered_entry_ = -1, selected_entry_ = -1;
  std::shared_ptr<const StepData> scrolled_for_;
};

// The QA answers section of an mtn-qa step (app/gui/panels/qa_answers.cpp): nothing when the
// step has no answer probabilities; else the chunk's question and its candidates ranked by
// mean P(answer), exact values on hover.
void draw_qa_answers(const QaAnswers& a, const StepData& st, const Document& doc);

// Every panel on synthetic traces of a chosen size: the living documentation.
class GalleryPanel : public Panel {
 public:
  GalleryPanel();
  ~GalleryPanel();  // where Impl is complete
  void draw(PanelContext& ctx) override;
  // Sizes offered (slots x tokens); index into them.
  static int size_count();
  static const char* size_name(int i);
  void set_size(int i);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // owned: a GalleryPanel is not copyable
};

}  // namespace mnemo::app
