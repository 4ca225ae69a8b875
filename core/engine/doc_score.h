// Scoring a whole document (docs/training.md#eval-doc): every token's loss with the memory
// carried across the document, reset to the initial memory at every segment, or zeroed at
// every segment — the numbers behind `eval --doc` and the per-token memory benefit.
#pragma once
#include "core/data/segmenter.h"
#include "core/models/memory_entries.h"
#include "core/models/model.h"

#include <functional>
#include <vector>

namespace mnemo {

// The model's input for segment i of a document: tokens, the within-segment next-token
// targets (the last position predicts the next segment's first token) and, when there is a
// next segment, its tokens (what Memformer predicts). A token classifier (predicts_tokens()
// false) gets no targets. What the Engine steps, shared so scores and views agree.
SegmentInput document_segment_input(const Segmenter& seg, int64_t i, const MemoryModelImpl& model);

// MemoryAblation and ablated_memory: core/models/model.h.

struct DocumentLosses {
  // loss[t]: nats of predicting document token t (docs/formats.md lm.loss: Memformer predicts
  // the next segment, the other families the next token); NaN where nothing predicts t
  // (token 0 always, and for Memformer all of segment 0).
  std::vector<float> loss;
  double nats_sum = 0;
  int64_t predicted = 0;
  double bits_per_token() const;
};

// Steps `model` through `doc` in segments of `segment_len` (no traces, no gradients).
// progress(done, total) after each segment; returning false stops early (the losses then
// cover the segments done; `complete` false).
DocumentLosses score_document(MemoryModelImpl& model, const Document& doc, int64_t segment_len, MemoryAblation a,
                              const std::function<bool(int64_t, int64_t)>& progress = nullptr,
                              bool* complete = nullptr);

// Slot ablation (docs/training.md#eval-by-slot): what each memory entry (core/models/model.h
// MemoryEntries) does for the tokens a segment's step predicts. For segment i, the model steps
// i from the memory carried into it, then once more with each entry removed in turn and once
// with every entry removed, for each asked ablation (kReset: the entry set to the initial
// memory's; kZeroed: zeroed). Segment 0 starts from the initial memory, which no text has
// written: nothing is removed there (its removed losses are the carried ones), as the reset
// and zeroed scores of score_document leave segment 0 alone.
struct EntryAblationLosses {
  MemoryAblation ablation = MemoryAblation::kReset;
  std::vector<std::vector<float>> removed;  // [entry][k]: nats of tokens[k] with that entry removed
  std::vector<float> all_removed;           // [k]: with every entry removed
};

struct SegmentEntryEffects {
  int64_t segment = -1;
  std::vector<int64_t> tokens;  // the document tokens this step predicts (score_document's)
  std::vector<float> carried;   // their nats with the memory carried
  std::vector<EntryAblationLosses> ablations;
  // Bits the entry saved on this segment's tokens: sum_k (removed - carried) / ln 2 (positive:
  // removing it makes the text harder; the entry helped).
  double bits_saved(size_t ablation, int64_t entry) const;
  double all_bits_saved(size_t ablation) const;  // the same with every entry removed
};

// Segment i of `doc` cut in segments of segment_len: `before` is the memory carried into it, `initial` the model's
// initial_memory(1). keep_going() is asked between the entries' steps; false stops (the
// result then has no ablations). 1 + (entries + 1) * ablations model steps.
SegmentEntryEffects segment_entry_effects(MemoryModelImpl& model, const Document& doc, int64_t segment_len, int64_t i,
                                          const MemoryState& before, const MemoryState& initial,
                                          const MemoryEntries& entries, const std::vector<MemoryAblation>& ablations,
                                          const std::function<bool()>& keep_going = nullptr);

struct DocumentEntryEffects {
  MemoryEntries entries;
  std::vector<MemoryAblation> ablations;
  std::vector<SegmentEntryEffects> segments;  // one per segment stepped
  DocumentLosses carried;                     // equal to score_document(kCarried)
  std::vector<DocumentLosses> all_removed;    // per ablation; equal to score_document(that ablation)
  std::vector<std::vector<double>> entry_bits_saved;  // [ablation][entry]: summed over the segments
  std::vector<double> all_bits_saved;                 // [ablation]: every entry removed, summed
  // Entries by bits saved, most first (ties by index).
  std::vector<int64_t> ranking(size_t ablation) const;
};

// Every segment of `doc` (segments of segment_len): the carried stepping of score_document with
// segment_entry_effects at each segment. progress as score_document's.
DocumentEntryEffects score_document_by_entry(MemoryModelImpl& model, const Document& doc, int64_t segment_len,
                                             const std::vector<MemoryAblation>& ablations,
                                             const std::function<bool(int64_t, int64_t)>& progress = nullptr,
                                             bool* complete = nullptr);

// Memory patching (docs/training.md#eval-patch): the memory after segment s of `doc`, carried
// from its start (what `--patch-from A:s` takes). Throws std::out_of_range for s outside
// 0..segments-1.
MemoryState document_memory_after(MemoryModelImpl& model, const Document& doc, int64_t segment_len, int64_t s);

// `doc` scored with the memory carried, except that segment `at` starts from `patch` (another
// document's memory, document_memory_after) instead of its own. Throws std::out_of_range for
// `at` outside 0..segments-1 and std::invalid_argument when `patch` is not a memory of this
// model (its tensors' names and shapes).
DocumentLosses score_document_patched(MemoryModelImpl& model, const Document& doc, int64_t segment_len,
                                      const MemoryState& patch, int64_t at);

}  // namespace mnemo
