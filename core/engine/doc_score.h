// Scoring a whole document (docs/training.md#eval-doc): every token's loss with the memory
// carried across the document, reset to the initial memory at every segment, or zeroed at
// every segment — the numbers behind `eval --doc` and the per-token memory benefit.
#pragma once
#include "core/data/segmenter.h"
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

}  // namespace mnemo
