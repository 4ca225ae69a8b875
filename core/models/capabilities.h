// What a model kind can do: which tokens its loss predicts, how it is built, what its memory
// is, how its provenance is read from its traces (docs/models.md). Code that behaves
// differently per model asks this (or MemoryModelImpl::capabilities()) instead of comparing
// model-kind strings. Each kind's values are in its family's entry (core/models/family.h);
// how the app draws a family is the app's (app/figures/families.h). Plain C++: the panels use it
// without LibTorch.
#pragma once
#include <string>

namespace mnemo {

// How the model is built: which layers it has and which config fields count.
enum class Architecture {
  kEncoderDecoder,  // Memformer: an encoder reading the memory, a writer and a decoder (dec_layers, n_cls)
  kDecoderOnly,     // RMT, Transformer-XL and their baseline: one decoder stack (core/models/decoder_lm.h)
  kMtn,             // the MTN family: n1_layers separate and n2_layers joint layers (families/mtn/core/model.h)
};

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

struct ModelCapabilities {
  bool next_segment = false;  // its loss predicts the next segment's tokens (else each next token)
  Architecture architecture = Architecture::kDecoderOnly;
  MemoryKind memory = MemoryKind::kNone;
  ProvenanceKind provenance = ProvenanceKind::kNone;
  bool mtn_family = false;          // the MTN layer counts (n1_layers / n2_layers) apply (architecture kMtn)
  bool rmt_read_block = false;      // its RMT attention's first block reads the memory ("read")
  bool rmt_previous_write = false;  // ... or is the previous write (write-only RMT)
  // The memory state tensor that holds its memory entries ("" when none).
  const char* memory_state = "";
};

// The capabilities of a model kind (its family's entry, core/models/family.h); throws
// std::invalid_argument naming the known kinds for an unknown one.
const ModelCapabilities& capabilities_of(const std::string& model_kind);

}  // namespace mnemo
