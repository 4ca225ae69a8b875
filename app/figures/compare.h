// Two models side by side (docs/gui.md#side-by-side): the difference of two maps of the same
// kind and shape (writer attention A − B, an attention layer A − B) on a diverging scale, a
// shared colour scale, and one figure holding several next to each other. Plain C++: the
// panels draw the same arrays the exports write.
#pragma once
#include "app/figures/figures.h"

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

// The side-by-side export of a step: for Memformer, writer attention A | B | A − B (one
// figure, base.{png,svg}) and the three matrices as base_a.csv, base_b.csv, base_diff.csv;
// for the attention family, the chosen layer and head likewise. label_a / label_b name the
// models in the titles. A pair that cannot be compared writes A | B only.
void write_side_by_side(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                        int head, int attn_layer, bool same_scale, const std::string& base, const FigureFormats& fm,
                        std::vector<std::string>& out);

}  // namespace mnemo::app
