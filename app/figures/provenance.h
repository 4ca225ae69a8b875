// Memory provenance figures (docs/gui.md#provenance, docs/models.md#provenance): where the
// content of one memory entry came from, as a map over the document and as its largest
// sources; and what a slot held after each visited step. The same builders serve the
// Document and Slot timeline panels' Export and the side-by-side export.
#pragma once
#include "app/figures/figures.h"
#include "core/trace/provenance.h"

namespace mnemo::app {

// Rows = segments 0..the state's last, columns = positions 0..segment_len-1; each cell the
// share of entry `slot` from that token (viridis, 0..the slot's largest share; NaN past the
// document's end). Title names the slot and its initial-memory and other shares.
viz::HeatmapSpec provenance_map_spec(const ProvenanceState& p, int slot, int64_t segment_len, int64_t doc_size);
// The `top` largest sources as horizontal bars ("#t 'x'" labels), then "initial memory"
// and (when > 0) "other inputs".
viz::BarSpec provenance_top_spec(const ProvenanceState& p, int slot, const Document& doc, int top = 12);

// base_map.{png,svg,csv}, base_top.{png,svg} and base.csv (token, segment, position, text,
// share of every token with a share > 0, then the rows "initial" and "other"). Nothing
// when slot is out of range.
void write_provenance(const ProvenanceState& p, int slot, const Document& doc, int64_t segment_len,
                      const std::string& base, const FigureFormats& fm, std::vector<std::string>& out);
// base.csv: segment, rank, token, text, share, initial — the slot's largest sources after
// every visited step that recorded them (the Slot timeline's "what the slot holds").
void write_slot_holdings(const VisitedSegments& visited, int slot, const Document& doc, const std::string& base,
                         const FigureFormats& fm, std::vector<std::string>& out);

}  // namespace mnemo::app
