// Figures of a Memory Transformer Network step (and of its naive-memory and no-memory
// baselines), built from the trace with the viz code: the memory shown as the document's own
// words. Shared by the CLI (write_step_figures dispatches here) and the GUI.
#pragma once
#include "app/figures.h"
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "viz/charts.h"
#include "viz/figure.h"

#include <string>
#include <vector>

namespace mnemo::app {

// Whether the snapshot holds MTN-family traces (mtn.kept_source or mtn.joint_attn.*).
bool is_mtn_snapshot(const Snapshot& snap);

// "t123 ab␣[c]de" — document token t with up to `context` tokens on each side, the token
// itself in brackets (labels escaped by viz::token_label).
std::string mtn_token_context(const Document& doc, int64_t t, int context = 4);

// The memory after the step: one horizontal bar per kept entry (memory order = decreasing
// importance), labelled by its document token in context, length = importance, colour = age
// (chunks survived), with an age legend on the right. Needs mtn.kept_source,
// mtn.kept_importance, mtn.age.
viz::Figure mtn_memory_figure(const Snapshot& snap, const Document& doc);

// Importance strip: one row of V_I.e + b_I over the candidates of keep_m_max, the previous
// memory's entries then the chunk's tokens (empty entries and padding left out); the
// candidates kept for the next chunk are outlined. Needs mtn.importance,
// mtn.candidate_source, mtn.kept_index.
viz::HeatmapSpec mtn_importance_spec(const Snapshot& snap, const Document& doc);
viz::Figure mtn_importance_figure(const Snapshot& snap, const Document& doc);

// The document from the oldest kept token, or kDocumentContext tokens before the chunk if
// that is earlier (at most kMaxDocumentView tokens in all), to the end of the chunk,
// word-wrapped from a chunk start; kept tokens highlighted in their age colour, the chunk
// on a grey band, thin marks at chunk starts.
inline constexpr int64_t kDocumentContext = 320;
inline constexpr int64_t kMaxDocumentView = 1536;
viz::Figure mtn_document_figure(const Snapshot& snap, const Document& doc);

// Joint-layer attention (mean over heads) of the chunk's tokens over [memory | chunk].
// layer = -1 for the last joint layer. Needs mtn.joint_attn.<layer>.
viz::HeatmapSpec mtn_attention_spec(const Snapshot& snap, const Document& doc, int layer = -1);

// Writes the figures that the trace supports into `dir` (which must exist):
// mtn_memory, mtn_importance, mtn_document (MTN) and mtn_attention (all three models),
// plus mtn_memory.csv, mtn_importance.csv and mtn_attention.csv when csv is chosen.
// Returns the paths written (none for a non-MTN snapshot).
std::vector<std::string> write_mtn_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                           const FigureFormats& formats);

}  // namespace mnemo::app
