// What one token of the shown step read from the memory, and what that memory held: the
// chain "this token read entry k, which held these earlier tokens" (docs/gui.md#memory-reads).
//
// The read is the token's own attention row in the model's last traced layer, mean over
// heads, on the columns that are memory:
//   Memformer       the encoder's memory read (memformer.read_attn.<last>): the token's row
//                   over the k slots as they were before the step; it sums to 1 over the slots.
//                   A token the step predicts (the next segment) has its row of
//                   memformer.decoder_read instead: the decoder's cross-attention over the
//                   encoder states times their memory read, which also sums to 1
//   RMT family      the token's row of rmt.attn.<last> on the read block (write-only RMT: the
//                   previous write), a share of the row that also covers the segment's tokens
//   Transformer-XL  its row of trxl.attn.<last> on the cache (the previous segment's states,
//                   so each entry is a document token itself)
//   MTN             its row of mtn.joint_attn.<last> on the kept entries (document tokens)
// What a slot or memory token held before the step is its provenance after the previous
// step (SegmentRecord::prov_top of segment - 1, docs/models.md#provenance); the first
// segment reads the initial memory, which holds no text.
#pragma once
#include "app/figures/step_data.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct MemoryRead {
  int entry = -1;         // slot / memory token / column index within the memory block
  int64_t token = -1;     // the document token an entry is (cache, MTN), else -1
  float weight = 0.f;     // the token's attention on the entry
  // What the entry held before the step, largest first (slots, memory tokens: provenance
  // after the previous step; a token entry: itself, weight 1). Empty when unknown.
  std::vector<ProvenanceSource> holds;
  float initial_share = std::nan("");  // the initial memory's share of the entry (NaN: unknown)
};

struct MemoryReads {
  int64_t token = -1;       // the document token whose row this is
  std::string entry_name;   // "slot", "memory token", "cache token", "kept token"
  std::string how;          // where the weights come from, for tooltips and captions
  int layer = -1;           // the model layer read
  float memory_share = 0.f; // the row's total on memory (1 for Memformer's memory read)
  // Whether the weights are a read of their own over the memory alone (Memformer's encoder
  // memory read), so that memory_share is 1 by construction and says nothing.
  bool own_read = false;
  // Whether the token is one the step predicts (Memformer's next segment) rather than one of
  // its segment: the weights are then memformer.decoder_read's row.
  bool predicted = false;
  // Memformer with model.memory_gate: tanh(g) of the read layer, the factor its read enters
  // the encoder with (a read at gate 0.0004 shapes the prediction that little); NaN: ungated.
  float gate = std::nan("");
  int entries_total = 0;    // memory entries the row covers
  bool holds_known = false; // whether `holds` could be filled (the previous step was visited)
  std::string holds_note;   // when not: why, and what to do (shown to the user)
  std::vector<MemoryRead> top;  // the `top` largest weights, descending (ties: lower entry first)
  bool empty() const { return top.empty(); }
};

// The chain for document token `token` of the step `st`: a token of its segment, or for
// Memformer one it predicts (empty when it is neither, or the step has no memory read). What
// the slots held comes from the previous segment's visited record, or, when that segment was
// not shown (a jump computes it untraced), from `before`: the provenance after the previous
// step as the publisher's chain computed it (PublishedView::provenance_before; ignored unless
// it is of segment st.segment - 1).
MemoryReads memory_reads(const StepData& st, const VisitedSegments& visited, int64_t token, int top = 3,
                         const ProvenanceState* before = nullptr);

}  // namespace mnemo::app
