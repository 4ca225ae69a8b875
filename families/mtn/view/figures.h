// Figures of a Memory Transformer Network step (docs/models.md#mtn) and of its naive-memory
// and no-memory baselines: the memory shown as the document's own words — the kept entries
// with importance and age, keep_m_max's candidates, and the document with kept tokens
// highlighted. The joint-layer attention is an attention map (app/figures/attention.h).
#pragma once
#include "app/figures/figures.h"

namespace mnemo::app {

// "t123  ab [c]de" — document token t with up to `context` tokens on each side, the token
// itself in brackets (labels escaped).
std::string mtn_token_context(const Document& doc, int64_t t, int context = 4);

// The memory after the step: one horizontal bar per kept entry (memory order = decreasing
// importance), labelled by its token in context, length = importance, colour = age, with an
// age legend. Needs st.mtn.present.
viz::Figure mtn_memory_figure(const StepData& st, const Document& doc);
// keep_m_max's candidates (previous memory's entries, then the chunk's tokens) as one row of
// importance; those kept for the next chunk are outlined in the figure.
viz::HeatmapSpec mtn_importance_spec(const StepData& st, const Document& doc);
viz::Figure mtn_importance_figure(const StepData& st, const Document& doc);
// The document from the oldest kept token (or kDocumentContext tokens before the chunk,
// from a chunk start; at most kMaxDocumentView tokens) to the end of the chunk, word-wrapped;
// kept tokens highlighted in their age colour, the chunk on a grey band, chunk starts marked.
viz::Figure mtn_document_figure(const StepData& st, const Document& doc);

// The memory figure (+ memory_base.csv: slot, source, token, context, importance, age), the
// document view and the candidates' importance (+ importance_base.csv) of an MTN step.
// Nothing for a step without an MTN memory.
void write_mtn_memory(const StepData& st, const Document& doc, const std::string& memory_base,
                      const std::string& document_base, const std::string& importance_base, const FigureFormats& fm,
                      std::vector<std::string>& out);

}  // namespace mnemo::app
