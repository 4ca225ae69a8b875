// What a model kind can do, in one table (docs/models.md): which tokens its loss predicts,
// what its memory is, how its provenance is read from its traces, which panels draw it and
// how its attention map is titled. Code that behaves differently per model asks this (or
// MemoryModelImpl::capabilities()) instead of comparing model-kind strings; only the factory
// and config parsing name the kinds. Plain C++: the panels use it without LibTorch.
#pragma once
#include <string>

namespace mnemo {

enum class MemoryKind {
  kNone,            // transformer, no-memory
  kSlots,           // Memformer: k slot vectors written by attention (state "slots")
  kMemoryTokens,    // RMT: m memory tokens read and written by the decoder (state "memory")
  kCache,           // Transformer-XL: the previous segment's hidden states
  kCacheAndTokens,  // Transformer-XL + RMT
  kKeptTokens,      // MTN: the most important earlier tokens, each one document token
  kLearnedVectors,  // mtn-naive: learned vectors, not tokens
};

// How the provenance of memory entries is read (core/trace/provenance_trace.h).
enum class ProvenanceKind {
  kNone,
  kWriterAttention,   // Memformer: the writer's rows (memformer.writer_attn)
  kAttentionRollout,  // RMT, trxl-rmt: attention rollout of rmt.attn.<l> at the write rows
  kKeptEntries,       // MTN: each kept entry's source token, in the trace itself
};

// Which panels draw the model's step: Memformer's writer panels or the attention panel.
enum class PanelFamily { kMemformer, kAttention };

struct ModelCapabilities {
  bool next_segment = false;  // its loss predicts the next segment's tokens (else each next token)
  MemoryKind memory = MemoryKind::kNone;
  ProvenanceKind provenance = ProvenanceKind::kNone;
  PanelFamily panels = PanelFamily::kAttention;
  bool mtn_family = false;          // the MTN layer counts (n1_layers / n2_layers) apply
  bool rmt_read_block = false;      // the RMT map's first block reads the memory ("read")
  bool rmt_previous_write = false;  // ... or is the previous write (write-only RMT)
  const char* rmt_title = "RMT";    // the title of its RMT attention map
  // The memory state tensor that holds its memory entries ("" when none).
  const char* memory_state = "";
};

// The capabilities of a model kind; throws std::invalid_argument for an unknown kind.
const ModelCapabilities& capabilities_of(const std::string& model_kind);

}  // namespace mnemo
