// Figures of a step, built from its trace with the viz code; shared by the CLI and the GUI.
#pragma once
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "viz/charts.h"

#include <string>
#include <vector>

namespace mnemo::app {

struct FigureFormats {
  bool png = false, svg = false, csv = false;
};
// Parses "png,svg,csv" (any non-empty subset). Throws UsageError naming --format.
FigureFormats parse_formats(const std::string& list);

// Label of document token `t` (bytes escaped for display).
std::string token_text(const Document& doc, int64_t t);

// Writer attention of a Memformer step as a heatmap: rows = slots, columns = [self |
// the segment's real tokens | cls tokens]. head = -1 for the mean over heads.
viz::HeatmapSpec writer_attention_spec(const Snapshot& snap, const Document& doc, int head);
viz::BarSpec slot_types_spec(const Snapshot& snap);
viz::BarSpec forgetting_spec(const Snapshot& snap);

// Writes every figure of a Memformer step into `dir` (which must exist) in the chosen
// formats: writer_attention_mean, writer_attention_head<h>, slot_types, forgetting.
// Returns the paths written.
std::vector<std::string> write_step_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                            const FigureFormats& formats);

}  // namespace mnemo::app
