// Stepping engine (docs/architecture.md#data-flow): document -> segments -> model steps -> snapshots.
//
// The engine keeps the memory state before every visited segment, so stepping back is a
// lookup (no recompute) and jump(n) recomputes only from the nearest kept state.
// An Engine is used from one thread at a time (the worker); the Snapshots it publishes
// are immutable and may be read from any thread.
#pragma once
#include "core/data/segmenter.h"
#include "core/models/model.h"
#include "core/trace/analysis.h"

#include <memory>
#include <optional>

namespace mnemo {

struct Snapshot {
  int64_t segment = -1;        // index of the segment this step encoded
  int64_t num_segments = 0;
  int64_t first_token = 0;     // document token index of the segment's first token
  int64_t length = 0;          // real tokens in the segment
  Trace trace;                 // the TraceSpec's keys for this step
  double loss = std::nan("");  // mean loss of predicting the next segment (NaN when none)
  bool non_finite = false;     // a NaN/Inf was seen in the loss or a traced tensor
  std::string non_finite_key;  // the first key that held a NaN/Inf
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

class Engine {
 public:
  Engine(MemoryModel model, Document doc, int64_t segment_len, TraceSpec spec);
  // The same over a document shared with its owner (the app's worker): no copy of the bytes.
  Engine(MemoryModel model, std::shared_ptr<const Document> doc, int64_t segment_len, TraceSpec spec);

  int64_t num_segments() const { return segmenter_.num_segments(); }
  // Segment shown last (-1 before the first step).
  int64_t position() const { return position_; }
  // Highest segment whose input memory is kept (states_.size() - 1).
  int64_t kept_states() const { return static_cast<int64_t>(states_.size()); }
  const Document& document() const { return *doc_; }
  const Segmenter& segmenter() const { return segmenter_; }
  const MemoryModel& model() const { return model_; }
  const TraceSpec& spec() const { return spec_; }
  void set_spec(TraceSpec spec);

  // Each returns the snapshot of the segment now shown, or nullptr when there is no such
  // segment (forward past the end, back before the start); the position is then unchanged.
  SnapshotPtr step_forward();
  SnapshotPtr step_back();
  // Computes segment n (0-based) from the nearest kept state at or before n.
  // Throws std::out_of_range for n outside 0..num_segments()-1.
  SnapshotPtr jump(int64_t n);
  // Forget every state but the initial one and go back to before the first segment.
  void reset();

  // Memory before segment i (i <= kept_states()-1). Throws std::out_of_range otherwise.
  const MemoryState& memory_before(int64_t i) const;
  // Number of model steps computed so far (for tests: stepping back computes nothing new
  // for the memory; a fresh snapshot of a kept segment costs exactly one step).
  int64_t steps_computed() const { return steps_computed_; }

  // Optional cooperative cancel/progress for long jumps: called after each segment with
  // (done, total); return false to stop early (jump then returns nullptr).
  std::function<bool(int64_t, int64_t)> progress;

  // Called after every model step the engine computes — the traced step of a jump and each
  // untraced step before it — with the segment index and its trace: the spec's keys on a
  // traced step, only `keys` on the others (a provenance chain needs every step,
  // docs/models.md#provenance). Empty keys and a null function switch it off.
  void set_step_observer(std::vector<std::string> keys, std::function<void(int64_t, const Trace&)> fn);

  // Memory benefit: every traced step of a model with a memory also runs the segment from the
  // initial memory and from a zeroed memory (no gradients, no trace of their own) and puts
  // their per-token losses into the snapshot as lm.loss_memory_reset / lm.loss_memory_zeroed
  // (segment 0 starts from the initial memory either way). Costs two untraced model steps
  // per traced step; not counted in steps_computed(). Changing it drops the kept snapshots.
  void set_memory_benefit(bool on);
  bool memory_benefit() const { return memory_benefit_; }

 private:
  SnapshotPtr compute(int64_t i, bool traced);
  SegmentInput input_for(int64_t i) const;

  MemoryModel model_;
  std::shared_ptr<const Document> doc_;  // never null; the segmenter points into it
  Segmenter segmenter_;
  TraceSpec spec_;
  TraceSpec observer_spec_;
  std::function<void(int64_t, const Trace&)> observer_;
  std::vector<MemoryState> states_;  // states_[i] = memory before segment i
  std::map<int64_t, SnapshotPtr> snapshots_;
  int64_t position_ = -1;
  int64_t steps_computed_ = 0;
  bool memory_benefit_ = false;
};

// Whether any traced tensor or the loss holds NaN/Inf; fills key of the first.
bool find_non_finite(const Trace& trace, std::string* key);

}  // namespace mnemo
