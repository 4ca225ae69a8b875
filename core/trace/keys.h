// The canonical trace keys: every name a model, the recorder, the app, the Python package
// and the tests use for a traced tensor (a family in a folder of its own keeps its keys there:
// families/mtn/core/keys.h). Shapes are batch first, float32 unless noted; the
// same names are used in exported trace files (docs/formats.md, "Trace keys", lists each
// with its meaning). Keys ending in '.' are prefixes completed by a layer index (or, for
// hash keys, by a module path and a suffix).
//
// Plain constants only: this header includes nothing heavier than <string>, so code that
// only needs the names (the app's panels, the session readers) does not compile LibTorch.
#pragma once
#include <string>

namespace mnemo::keys {

// --- Every model ---
inline constexpr const char* kInputTokens = "input.tokens";    // [B, L] int64 token ids of the segment
inline constexpr const char* kInputOffsets = "input.offsets";  // [B, L, 2] int64 byte range of each token
inline constexpr const char* kLmLoss = "lm.loss";              // [B, L] per-token cross-entropy of the predicted tokens
// The same step's lm.loss with the memory it started from replaced (the Engine computes them
// when asked, core/engine/engine.h set_memory_benefit; models with a memory only): reset to
// the initial memory (what a document's first segment sees), and zeroed. The memory's benefit
// to token t is their difference from lm.loss (docs/formats.md#memory-benefit).
inline constexpr const char* kLmLossMemoryReset = "lm.loss_memory_reset";    // [B, L]
inline constexpr const char* kLmLossMemoryZeroed = "lm.loss_memory_zeroed";  // [B, L]

// --- Memformer (docs/models.md#memformer) ---
inline constexpr const char* kWriterAttn = "memformer.writer_attn";  // [B, H, k, 1+L+C]; column 0 = the slot itself
inline constexpr const char* kReadAttnPrefix = "memformer.read_attn.";  // + layer: [B, H, L+C, k]
inline constexpr const char* kMemoryPrev = "memformer.memory_prev";  // [B, k, d] memory before the step
inline constexpr const char* kMemory = "memformer.memory";           // [B, k, d] memory after the step
inline constexpr const char* kForgetNorm = "memformer.forget_norm";  // [k] ||v_bias^i||
inline constexpr const char* kSlotType = "memformer.slot_type";      // [B, k] int8: 0 retain, 1 mix, 2 overwrite
inline constexpr const char* kEncoderOut = "memformer.enc";          // [B, L+C, d] final encoder states (enc_norm applied)
// The decoder's cross-attention over the encoder states [tokens | cls]; rows are the predicted
// (next) segment's positions, L' of them.
inline constexpr const char* kCrossAttnPrefix = "memformer.cross_attn.";  // + decoder layer: [B, H, L', L+C]
// What each predicted token drew from the slots: mean over heads of the last decoder layer's
// cross-attention [B, L', L+C] times the mean over heads of the last encoder layer's memory
// read of those rows, cls included [B, L+C, k] (docs/models.md#memformer).
inline constexpr const char* kDecoderRead = "memformer.decoder_read";  // [B, L', k]
// With model.memory_gate: tanh(read_gate) of each encoder layer, the factor its memory read
// enters with (docs/models.md#memory-gate); absent from ungated models.
inline constexpr const char* kReadGate = "memformer.read_gate";  // [N_enc]

// --- Recurrent Memory Transformer and Transformer-XL (docs/models.md#rmt) ---
inline constexpr const char* kRmtAttnPrefix = "rmt.attn.";             // + layer: [B, H, T, T], T = 2m+L, [read | tokens | write]
inline constexpr const char* kRmtBlockMassPrefix = "rmt.block_mass.";  // + layer: [B, H, 3] reading, writing, rewriting
inline constexpr const char* kRmtMemoryPrev = "rmt.memory_prev";       // [B, m, d]
inline constexpr const char* kRmtMemory = "rmt.memory";                // [B, m, d]
inline constexpr const char* kTrxlAttnPrefix = "trxl.attn.";           // + layer: [B, H, L, P + R + L + W]

// --- Memory Transformer Network: families/mtn/core/keys.h (a family in a folder of its own
// keeps its key names there, docs/architecture.md#adding-a-model) ---

// --- MemoryFormer hashed projections at module path P (docs/models.md#memoryformer) ---
inline constexpr const char* kHashPrefix = "hash.";
inline std::string hash_bucket_key(const std::string& path) { return kHashPrefix + path + ".bucket"; }  // [N, K] int32
inline std::string hash_p_key(const std::string& path) { return kHashPrefix + path + ".p"; }            // [N, K] p(z_k)
inline std::string hash_counts_key(const std::string& path) { return kHashPrefix + path + ".counts"; }  // [K, 2^tau] int64

// "<prefix><layer>", e.g. layer_key(kRmtAttnPrefix, 0) == "rmt.attn.0".
inline std::string layer_key(const char* prefix, int layer) { return prefix + std::to_string(layer); }

}  // namespace mnemo::keys
