// Attention maps of the decoder-style models — the Recurrent Memory Transformer over
// [read | tokens | write], Transformer-XL's token rows over [cache | tokens] (docs/models.md#rmt),
// the MTN family's joint layers over [memory | chunk | write] (docs/models.md#mtn) — with
// their blocks outlined and named, and the block masses (reading, writing, rewriting) per
// layer. Built from AttentionData (app/figures/step_data.h), whichever family it holds.
#pragma once
#include "app/figures/figures.h"

#include <cmath>

namespace mnemo::app {

// The map of layer index li (into a.layers) and head (-1 = mean over heads) of step `st`.
// train_step >= 0: the step of a probe recording, named in the title (segment_title).
viz::HeatmapSpec attention_map_spec(const AttentionData& a, int64_t segment, int li, int head, int64_t train_step = -1);
// Block masses per layer (mean over heads, or one head) as grouped bars.
viz::BarSpec attention_mass_spec(const AttentionData& a, int64_t segment, int head, int64_t train_step = -1);

// File name of a map as `mnemoscope step` names it: "rmt_attention", "trxl_attention" or
// "mtn_attention" by the trace the map came from.
std::string attention_file_stem(const AttentionData& a);

// A weight map's colour range: vmin..vmax where both are finite (the scale a panel draws),
// else 0..the map's largest; printed at the end of the title (", colour 0..1"; auto:
// ", colour 0..0.37 (the map's largest)"), so a figure says the scale it was drawn on.
void set_weight_scale(viz::HeatmapSpec& s, float vmin = NAN, float vmax = NAN);

// The map (heatmap + CSV matrix) of one layer index and head, on the colour range vmin..vmax
// (NaN: 0..the map's largest; set_weight_scale prints it in the title).
void write_attention_map(const AttentionData& a, int64_t segment, int li, int head, const std::string& base,
                         const FigureFormats& fm, std::vector<std::string>& out, float vmin = NAN, float vmax = NAN,
                         int64_t train_step = -1);
// The block-mass bars (head -1: mean) and base.csv with every layer and head (layer, head, masses...).
void write_attention_masses(const AttentionData& a, int64_t segment, int head, const std::string& base,
                            const FigureFormats& fm, std::vector<std::string>& out, int64_t train_step = -1);

}  // namespace mnemo::app
