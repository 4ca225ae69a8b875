// Memory entries (docs/models.md#memory-entries): the parts of a memory state one removes one
// at a time to see what each does — Memformer's slots, RMT's memory tokens, Transformer-XL's
// cache blocks (a segment's worth of cached positions each), MTN's kept entries, mtn-naive's
// learned vectors — and the memory with chosen entries removed (the slot ablation of `eval
// --doc --by-slot`, core/engine/doc_score.h). Which tensors hold entries comes from the
// model's capabilities (core/models/capabilities.h) and its initial memory's shapes.
#pragma once
#include "core/models/model.h"

#include <string>
#include <utility>
#include <vector>

namespace mnemo {

// A group of entries lies along dim 1 of every tensor it names; entry g of a group is the
// positions range(g) of each.
struct MemoryEntryGroup {
  std::string name;               // "slot", "memory token", "cache block", "kept entry", "learned vector"
  std::vector<std::string> keys;  // the state tensors holding these entries along dim 1
  int64_t rows = 0;               // their size along dim 1
  int64_t block = 1;              // positions per entry; a cache's oldest block may be shorter
  int64_t count = 0;              // entries in the group
  int64_t first = 0;              // index of the group's entry 0 among all the state's entries
  // Positions [begin, end) along dim 1 of entry g (0 <= g < count). A cache block's positions
  // count back from the newest: the last block is the previous segment.
  std::pair<int64_t, int64_t> range(int64_t g) const;
};

struct MemoryEntries {
  MemoryKind kind = MemoryKind::kNone;
  std::vector<MemoryEntryGroup> groups;
  // State tensors of no entry (MTN's tokens_read): removed only with every entry.
  std::vector<std::string> shared;
  int64_t count() const;
  // "slot 3", "memory token 0", "cache block 1 (positions 32..63)", "kept entry 5".
  std::string label(int64_t entry) const;
  // The group holding `entry`; throws std::out_of_range naming the count.
  const MemoryEntryGroup& group_of(int64_t entry) const;
};

// The entries of a memory state `initial` (the model's initial_memory(1)) of a model with
// `caps`, stepped in segments of `segment_len` tokens (a cache block is one segment's worth).
// A model without memory has none. Throws std::invalid_argument when the state does not
// have the tensors its kind keeps.
MemoryEntries memory_entries(const ModelCapabilities& caps, const MemoryState& initial, int64_t segment_len);

// `carried` with the entries `which` removed: each of their positions set to the initial
// memory's (kReset) or to zero (kZeroed; integer tensors take the initial memory's, as
// ablated_memory does). With every entry in `which` the shared tensors are removed too, so
// removing all entries is ablated_memory(a, carried, initial), value for value. kCarried and
// an empty `which` return `carried`. Throws std::out_of_range for an entry outside 0..count-1.
MemoryState ablate_entries(const MemoryState& carried, const MemoryState& initial, const MemoryEntries& entries,
                           const std::vector<int64_t>& which, MemoryAblation a);

}  // namespace mnemo
