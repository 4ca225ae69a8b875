// What the UI draws, published by the worker thread as immutable shared_ptr<const ...>
// (DESIGN §2): the opened document and model, plain arrays of the shown step (so the UI
// thread never runs LibTorch), and what is remembered of every visited segment.
#pragma once
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "core/models/config.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

// The opened document and model. Replaced (with a new id) whenever either changes.
struct SessionInfo {
  uint64_t id = 0;
  std::shared_ptr<const Document> doc;
  ModelConfig cfg;
  uint64_t seed = 0;
  std::string checkpoint;  // "" = randomly initialised under `seed`
  int64_t segment_len = 0, num_segments = 0;
  std::vector<int64_t> line_starts;  // token index of each line's first token (after '\n')
};

// One step as plain arrays, extracted from a Snapshot on the worker.
struct StepData {
  SnapshotPtr snap;  // the engine's snapshot (for export through app/figures.h)
  int64_t segment = -1, num_segments = 0, first_token = 0, length = 0;
  double loss = std::nan("");
  bool non_finite = false;
  std::string non_finite_key;

  // Writer attention: blocks of slots x cols, block 0 = mean over heads, block 1 + h = head h.
  // cols = 1 (self) + length (real tokens) + n_cls; empty when the model has no writer.
  int slots = 0, heads = 0, cols = 0, n_cls = 0;
  std::vector<float> writer;
  std::vector<std::string> col_labels;  // "self", token labels, "<cls>"
  float writer_max = 0.f;               // max over every block (for a shared colour scale)
  std::vector<float> block_min, block_max;  // finite min / max of each block (heads + 1)
  std::vector<float> self_mass;         // [slots], mean over heads (column 0)

  std::vector<float> forget_norm;       // [slots] ||v_bias||, empty when not traced

  int dim = 0;
  std::vector<float> memory;            // [slots x dim] after the step, empty when not traced
  float memory_absmax = 0.f;
  std::vector<float> slot_norm;         // [slots] ||m_i|| after the step
  std::vector<float> cos_prev;          // [slots] cos(m_i before, m_i after); NaN for a zero slot

  // Loss of predicting each token of the next segment (lm.loss), empty when none.
  std::vector<float> next_loss;

  bool has_writer() const { return cols > 0 && slots > 0 && !writer.empty(); }
  // The slots x cols block of `head` (-1 = mean).
  const float* writer_block(int head) const;
};

// Extracts a step's arrays; keys missing from the trace leave their arrays empty.
StepData make_step_data(SnapshotPtr snap, const Document& doc);

// What is kept of a visited segment (for the slot timeline and token losses).
struct SegmentRecord {
  std::vector<float> self_mass;  // [slots]
  std::vector<float> next_loss;  // loss of the next segment's tokens
};

struct SessionView {
  uint64_t version = 0;                       // bumps on every publication
  std::shared_ptr<const SessionInfo> info;    // null until a document is open
  std::shared_ptr<const StepData> step;       // null before the first step
  int64_t position = -1;
  uint64_t visited_version = 0;               // bumps when `visited` changes
  std::map<int64_t, std::shared_ptr<const SegmentRecord>> visited;
  std::string model_note;                     // "randomly initialised (seed 0)" / "weights from F"

  // Loss of document token t as predicted by the step of the segment before it (NaN when
  // that segment was not visited, or t is in segment 0).
  float token_loss(int64_t t) const;
  bool is_visited(int64_t segment) const { return visited.count(segment) != 0; }
};
using SessionPtr = std::shared_ptr<const SessionView>;

// Line starts of a document (token 0 and every token after a '\n').
std::vector<int64_t> line_starts_of(const Document& doc);

}  // namespace mnemo::app
