// Two models side by side (docs/gui.md#side-by-side): the difference of two maps of the same
// kind and shape (writer attention A − B, an attention layer A − B) on a diverging scale, a
// shared colour scale, each side's loss and memory benefit, and the export's slide figure (A
// over B). Plain C++: the panels draw the same arrays the exports write.
#pragma once
#include "app/figures/figures.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

// A − B of two maps; ok = false with `why` when they cannot be compared (absent, or shapes
// that differ: another slot count, segment length or layout).
struct DiffMap {
  bool ok = false;
  std::string why;
  int rows = 0, cols = 0;
  std::vector<float> values;  // rows x cols, A − B
  float absmax = 0.f;         // max |A − B| over finite cells (the diverging scale is ±absmax)
  std::vector<std::string> row_labels, col_labels;
};

// Writer attention of one head (-1 = mean), A − B.
DiffMap writer_difference(const StepData& a, const StepData& b, int head);
// Attention map (layer index li into AttentionData::layers, head -1 = mean), A − B.
DiffMap attention_difference(const AttentionData& a, const AttentionData& b, int li, int head);

// The larger of two maps' maxima for a shared colour scale (NaN-safe).
float shared_max(float a, float b);

// The difference as a heatmap spec (diverging, ±absmax, 0 = white).
viz::HeatmapSpec difference_spec(const DiffMap& d, const std::string& title);

// Figures placed left to right under one title, `gap` px apart, top-aligned.
viz::Figure side_by_side(const std::vector<viz::Figure>& figs, const std::string& title, float gap = 28.f);

// One side's numbers of the shown step (docs/gui.md#side-by-side): its loss (nats per
// predicted token, StepData::loss, with the tokens it covers) and what its memory saved on
// those predictions against the memory reset to the initial one (segment_benefit_bits; NaN
// when the side did not compute it, e.g. a model without memory).
struct SideSummary {
  double loss_nats = NAN;
  int64_t first = -1, last = -1;  // the predicted tokens (document indices), -1 when none
  bool next_segment = false;      // they are the next segment's tokens (Memformer)
  double saved_bits = NAN;
  int64_t saved_tokens = 0;
  // "loss 1.2345 nats/token (tokens 35..69) - memory saves 14.2 bits vs reset (0.41/token)".
  std::string text() const;
};
SideSummary side_summary(const StepData& st);

// The largest weight of the attention map a side shows: the writer attention of writer_head
// (-1 mean) when `writer` (a Memformer), else attention layer index li and attn_head; NaN when
// the step has none. The shared colour scale is 0..shared_max of both sides' values.
float shown_attention_max(const StepData& st, bool writer, int writer_head, int li, int attn_head);

// The map a side contributes to the side-by-side export: its writer attention (a Memformer:
// the selected slot's row outlined) or its attention map of layer index li, attn_head (the
// selected slot's row of the "write" block outlined, when the map has one). rows == 0: none.
viz::HeatmapSpec side_map_spec(const StepData& st, int writer_head, int attn_layer, int attn_head, int selected_slot,
                               std::string* what);

// A side's colour range as its panel draws it (lo..hi); NaN: not given.
struct ColourRange {
  float lo = NAN, hi = NAN;
  bool given() const { return std::isfinite(lo) && std::isfinite(hi) && hi > lo; }
};

// The slide figure of the side-by-side export: A's map over B's, each at `width` pixels
// (its cells stretched to fill it) under a line with the side's model, map and numbers
// (side_summary); together about width x 9/16 (a 16:9 slide). A side whose range_a / range_b
// is given is drawn on it (the range its panel draws: the app's export); otherwise
// same_scale puts both on 0..the larger maximum of the two maps, else each on its own
// 0..max. The title prints the ranges. Empty figure (width 0) when neither side has a map.
viz::Figure side_by_side_slide(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                               int writer_head, int attn_layer, int attn_head, bool same_scale, int selected_slot,
                               float width = 1600.f, ColourRange range_a = {}, ColourRange range_b = {});

// The side-by-side export of a step: base.{png,svg} the slide figure above (A over B), and,
// when the two maps are of one kind and shape, base_diff.{png,svg} with A - B at the same
// width; the matrices as base_a.csv, base_b.csv, base_diff.csv. label_a / label_b name the
// models in the titles.
void write_side_by_side(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                        int writer_head, int attn_layer, int attn_head, bool same_scale, int selected_slot,
                        const std::string& base, const FigureFormats& fm, std::vector<std::string>& out,
                        ColourRange range_a = {}, ColourRange range_b = {});

}  // namespace mnemo::app
