// Figures of a Recurrent Memory Transformer / Transformer-XL step (DESIGN §3.2, §3.3), built
// from the trace with the viz code. Shared by the CLI (write_step_figures dispatches here by
// the trace's keys) and, later, the GUI.
#pragma once
#include "app/figures.h"
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "viz/charts.h"

#include <string>
#include <vector>

namespace mnemo::app {

// Layers with an rmt.attn.<l> / trxl.attn.<l> trace, ascending.
std::vector<int> rmt_layers(const Snapshot& snap);
std::vector<int> trxl_layers(const Snapshot& snap);

// The full RMT attention map of `layer` (head = -1: mean over heads): rows and columns
// [read r0.. | the segment's real tokens | write w0..], the three blocks outlined by
// separators and labelled above the columns. Needs rmt.attn.<layer>.
viz::HeatmapSpec rmt_attention_spec(const Snapshot& snap, const Document& doc, int layer, int head);

// Reading (tokens -> read), writing (write -> tokens) and rewriting (write -> read) mass per
// layer, mean over heads: bars grouped by layer. Needs rmt.block_mass.<l>.
viz::BarSpec rmt_block_mass_spec(const Snapshot& snap);

// Transformer-XL attention of the segment's tokens (rows) over [cache | (read) | tokens |
// (write)] (columns), mean over heads or one head; cache columns are labelled with the
// document tokens they hold. Needs trxl.attn.<layer>.
viz::HeatmapSpec trxl_attention_spec(const Snapshot& snap, const Document& doc, int layer, int head);

// Writes into `dir` (which must exist), for each traced layer l:
//   rmt_attention_l<l>_mean, rmt_attention_l<l>_head<h>  (+ .csv matrices)
//   rmt_block_mass                                        (+ rmt_block_mass.csv: layer, head, 3 masses)
//   trxl_attention_l<l>_mean, trxl_attention_l<l>_head<h> (+ .csv)
// Returns the paths written (none when the trace has no RMT / TrXL keys).
std::vector<std::string> write_rmt_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                           const FigureFormats& formats);

}  // namespace mnemo::app
