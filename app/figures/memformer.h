// Memformer figures (docs/models.md#memformer): writer attention, slot types, forgetting-
// vector magnitudes, the memory, the slot timeline over visited segments, and the loss of
// every visited token.
#pragma once
#include "app/figures/figures.h"
#include "core/trace/slot_types.h"

#include <cmath>

namespace mnemo::app {

// Writer attention as a heatmap: rows = slots, columns = [self | the segment's real tokens
// | cls tokens]; head = -1 for the mean over heads. Colour scale 0..max of the map (an
// untrained writer is near-uniform, which a fixed 0..1 scale would show as one colour).
viz::HeatmapSpec writer_attention_spec(const StepData& st, int head);
// Slot types under `th` (re-classified from the writer's self mass).
viz::BarSpec slot_types_spec(const StepData& st, const SlotThresholds& th);
viz::BarSpec forgetting_spec(const StepData& st);
// Memory after the step: rows = slots, columns = dimensions (diverging, 0 = white).
viz::HeatmapSpec memory_spec(const StepData& st);
// Slot timeline: rows = slots, one column per visited segment, self-attention mass 0..1.
viz::HeatmapSpec timeline_spec(const VisitedSegments& visited);
// Loss per document token over the visited segments (x = token index).
viz::LineSpec token_loss_spec(const VisitedSegments& visited);

// Writers (base = path without extension; nothing is written when the step lacks the data).
// head -1 = mean; highlight = a slot row to outline (-1 none).
// On the colour range vmin..vmax (NaN: 0..the map's largest), printed in the title
// (app/figures/attention.h set_weight_scale).
void write_writer_attention(const StepData& st, int head, int highlight, const std::string& base,
                            const FigureFormats& fm, std::vector<std::string>& out, float vmin = NAN, float vmax = NAN);
// + base.csv: slot, type, self_mass.
void write_slot_types(const StepData& st, const SlotThresholds& th, const std::string& base, const FigureFormats& fm,
                      std::vector<std::string>& out);
// + base.csv: slot, v_bias_norm.
void write_forgetting(const StepData& st, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out);
// + base_slots.csv: slot, norm, cos_prev, drift.
void write_memory(const StepData& st, int highlight, const std::string& base, const FigureFormats& fm,
                  std::vector<std::string>& out);
void write_timeline(const VisitedSegments& visited, int highlight, const std::string& base, const FigureFormats& fm,
                    std::vector<std::string>& out);
// base_loss.{png,svg} and base_tokens.csv (token, segment, id, text, loss) of every visited segment.
void write_token_losses(const VisitedSegments& visited, const Document& doc, int64_t segment_len, const std::string& base,
                        const FigureFormats& fm, std::vector<std::string>& out);

}  // namespace mnemo::app
