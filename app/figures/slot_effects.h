// Slot effects (docs/formats.md#slot-effects): what each memory entry — a Memformer slot, an RMT
// memory token, a Transformer-XL cache block, an MTN kept entry — did for the tokens one
// segment's step predicts, as plain data: the bits each token cost more with the entry
// removed from the memory carried into the segment (core/engine/doc_score.h
// segment_entry_effects; app/figures/extract.h slot_effects_data fills this from it). The
// same data draws the Document tint of a clicked slot, the "slot effects" panel and the files
// of `step --by-slot`.
#pragma once
#include "app/figures/figures.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct SlotEffects {
  int64_t segment = -1;
  std::string entry_kind;           // "slot", "memory token", "cache block", "kept entry", "entry"
  std::vector<std::string> labels;  // one per entry: "slot 3", "cache block 1 (positions 32..63)"
  std::vector<int64_t> tokens;      // the document tokens the step predicts
  std::vector<float> carried;       // their nats with the memory carried
  // The ablations computed, in order: "reset" (the entry set to the initial memory's) and/or
  // "zeroed"; removed[a][e][k]: token k's nats with entry e removed; all_removed[a][k]: with
  // every entry removed.
  std::vector<std::string> ablations;
  std::vector<std::vector<std::vector<float>>> removed;
  std::vector<std::vector<float>> all_removed;
  bool entries_removed = true;  // false for segment 0, which starts from the initial memory

  bool empty() const { return labels.empty() || ablations.empty(); }
  int64_t entries() const { return static_cast<int64_t>(labels.size()); }
  // The index of ablation `name` ("reset" / "zeroed"), -1 when not computed.
  int ablation(const std::string& name) const;
  // Bits token k cost more with entry e removed: (removed - carried) / ln 2; > 0: the entry helped.
  float bits(size_t a, int64_t e, size_t k) const;
  // Bits entry e saved over the segment (sum over its tokens); the same with every entry removed;
  // the sum of the single entries' (need not equal the all-entries figure).
  double entry_bits(size_t a, int64_t e) const;
  double all_entries_bits(size_t a) const;
  double sum_of_entries(size_t a) const;
  // Entries by bits saved, most first (ties by index).
  std::vector<int64_t> ranking(size_t a) const;
  // The largest |bits| of one token over every entry (the colour scale's end, at least 0.5).
  float scale(size_t a) const;
  // Bits entry e saved on document token t (NaN when the step does not predict t).
  float token_bits(size_t a, int64_t e, int64_t t) const;
};

// Entries x predicted tokens: the bits each token costs with the entry minus without it
// (blue = the entry helped, red = it hurt, symmetric scale), entries ranked by effect.
viz::HeatmapSpec slot_effects_heatmap(const SlotEffects& fx, const Document& doc, size_t a);
// base.{png,svg} (the heatmap of the first ablation) and base.csv: one row per entry and
// token — entry,label,token,position_in_document,byte,nats_carried, then per ablation
// nats_<a> and bits_saved_<a>. Nothing when empty.
void write_slot_effects(const SlotEffects& fx, const Document& doc, const std::string& base, const FigureFormats& fm,
                        std::vector<std::string>& out);

}  // namespace mnemo::app
