// Recurrent Memory Transformer pieces (Recurrent Memory Transformer (docs/references.md#rmt) §3, docs/models.md#rmt):
// the layout of one step's sequence, the attention mask rules, and the block masses of
// an attention map. The model itself is DecoderLmImpl (core/models/decoder_lm.h).
#pragma once
#include "core/trace/keys.h"

#include <torch/torch.h>

namespace mnemo {

// One step of a decoder-only model attends over keys
//   [prefix (P) | read (R) | tokens (L) | write (W)]
// with queries [read | tokens | write]. prefix = cached per-layer states: the Transformer-XL
// cache (stop-gradient) or, for "rmt-write-only", the previous segment's write block.
struct SequenceLayout {
  int64_t prefix = 0, read = 0, tokens = 0, write = 0;
  int64_t rows() const { return read + tokens + write; }
  int64_t cols() const { return prefix + rows(); }
};

// Additive float mask [B, 1, T, P + T] (0 allowed, -inf not), T = R + L + W:
//   read rows see the read block only;
//   token rows see the prefix, the read block and tokens up to themselves (causal);
//   write rows see the prefix, the read block, every token and the whole write block.
// Keys that are invalid (prefix_valid [B, P] float 0/1 or bool, undefined when P = 0;
// token_valid [B, L] bool) are hidden from everyone but themselves.
torch::Tensor decoder_attention_mask(const SequenceLayout& layout, const torch::Tensor& prefix_valid,
                                     const torch::Tensor& token_valid);

// The parts of that mask that depend on the layout alone, so that a model stepping segments of
// one length builds them once: allow [T, P + T] bool (the rules above, before key validity)
// and self [T, P + T] bool (query i <-> key P + i, always seen).
struct DecoderMaskParts {
  torch::Tensor allow, self;
};
DecoderMaskParts decoder_mask_parts(const SequenceLayout& layout, torch::Device device);
// decoder_attention_mask from parts made by decoder_mask_parts(layout, token_valid's device).
torch::Tensor decoder_attention_mask(const SequenceLayout& layout, const DecoderMaskParts& parts,
                                     const torch::Tensor& prefix_valid, const torch::Tensor& token_valid);

// Block masses of an RMT attention map attn [B, H, T, T], T = 2m + L, order [read, tokens,
// write] (docs/formats.md#trace-keys rmt.attn): [B, H, 3] =
//   reading   = mean over valid token rows of the mass on read columns,
//   writing   = mean over write rows of the mass on valid token columns,
//   rewriting = mean over write rows of the mass on read columns.
// token_valid [B, L] bool, or undefined for all valid.
torch::Tensor rmt_block_mass(const torch::Tensor& attn, int64_t m, const torch::Tensor& token_valid);


}  // namespace mnemo
