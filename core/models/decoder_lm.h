// Decoder-only segment language models of the RMT paper (Recurrent Memory Transformer (docs/references.md#rmt)
// §3, docs/models.md#rmt, docs/models.md#transformer-xl), one backbone for every kind:
//
//   "transformer"     no memory: each segment alone (the paper's Baseline = Tr-XL, cache 0)
//   "trxl"            Transformer-XL: per-layer cache of the previous `cache_len` (-1: `slots`) token states
//                     (stop-gradient), relative positional attention
//   "rmt"             Recurrent Memory Transformer: [read (m) | tokens (L) | write (m)],
//                     m = slots; the write outputs are the next segment's memory
//   "rmt-write-only"  memory at the end only: [tokens | write]; the tokens read the previous
//                     segment's write block through a per-layer cache of its states (with
//                     gradient), as the paper's code does when memory sits only at the end
//   "trxl-rmt"        Transformer-XL cache (cache_len, -1 = segment_len) + RMT memory tokens
//
// Every kind: pre-LayerNorm blocks with relative positional attention (Dai et al. 2019) and a
// GELU FFN; every attention/FFN Linear is a make_projection; dense output head. The model
// reads SegmentInput.tokens/valid and predicts SegmentInput.targets where target_valid.
//
// Memory state (MemoryState names):
//   "memory"               [B, m, d]  RMT memory (initial = the learned `memory_init`)
//   "cache.<layer>"        [B, c, d]  Transformer-XL cache (detached), layer input states
//   "cache_valid"          [B, c]     float 1/0: which cache rows hold a real token
//   "write_cache.<layer>"  [B, m, d]  rmt-write-only: the previous write block's layer inputs
//   "write_cache_valid"    [B, m]     float 1/0 (0 before the first segment)
//
// Traces: input.tokens, input.offsets, lm.loss; with memory tokens rmt.attn.<l> [B, H, T, T]
// (T = 2m + L, [read, tokens, write]; for rmt-write-only the read block is the previous write
// block, whose rows are zero; for trxl-rmt the cache columns are left out, so rows sum to
// the mass not spent on the cache), rmt.block_mass.<l> [B, H, 3], rmt.memory_prev,
// rmt.memory; without a read block or with a cache trxl.attn.<l> [B, H, L, P + T] (token
// rows over [cache | read | tokens | write]).
#pragma once
#include "core/models/config.h"
#include "core/models/model.h"
#include "core/models/rmt.h"
#include "core/models/transformer_xl.h"
#include "core/nn/attention.h"

#include <map>
#include <tuple>

namespace mnemo {

struct DecoderLayerImpl : torch::nn::Module {
  DecoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin);
  // x [B, T, d] queries; keys/values are [prefix | x] (prefix [B, P, d] or undefined),
  // both pre-LayerNormed. weights receives [B, H, T, P + T] when non-null.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& prefix, const RelativePositions& rel,
                        const torch::Tensor& mask, torch::Tensor* weights);
  torch::nn::LayerNorm ln_attn{nullptr}, ln_ffn{nullptr};
  RelMultiHeadAttention attn{nullptr};
  FeedForward ffn{nullptr};
};
TORCH_MODULE(DecoderLayer);

// Everything one step computed, for tests and tools.
struct DecoderRun {
  SequenceLayout layout;
  torch::Tensor input;   // [B, T, d] layer-0 input [read | tokens | write]
  torch::Tensor hidden;  // [B, T, d] last layer output (before the final norms)
  torch::Tensor logits;  // [B, L, V]
  MemoryState memory;    // state after the step
};

class DecoderLmImpl : public MemoryModelImpl {
 public:
  explicit DecoderLmImpl(const ModelConfig& cfg);
  std::string kind() const override { return cfg_.model; }
  const ModelConfig& config() const { return cfg_; }

  MemoryState initial_memory(int64_t batch) override;
  SegmentOutput step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) override;
  DecoderRun run(const SegmentInput& in, const MemoryState& mem, Tracer* tracer);

  int64_t memory_tokens() const { return m_; }  // m (0 without RMT memory)
  int64_t cache_len() const { return c_; }      // c (0 without a Transformer-XL cache)
  bool has_read_block() const { return read_block_; }
  bool write_only() const { return m_ > 0 && !read_block_; }

  torch::nn::Embedding tok_emb{nullptr};
  torch::Tensor memory_init;          // [m, d]
  torch::Tensor read_emb, write_emb;  // [m, d] slot embeddings of the read / write blocks
  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm norm{nullptr};      // before the head
  torch::nn::LayerNorm mem_norm{nullptr};  // on the write outputs: the next memory
  torch::nn::Linear head{nullptr};

 private:
  // What a step needs that depends on the segment length and device alone — the mask's layout
  // parts and the sinusoid table of the relative distances — built once per (length, device)
  // instead of every step. Plain tensors (never inference tensors), so a table built while the
  // engine steps serves training too.
  struct StepConstants {
    DecoderMaskParts mask;
    RelativePositions rel;
  };
  StepConstants step_constants(const SequenceLayout& lay, torch::Device device);
  using ConstantsKey = std::tuple<int64_t, int, int>;  // (tokens, device type, device index)

  ModelConfig cfg_;
  int64_t m_ = 0, c_ = 0;
  bool read_block_ = false;
  std::map<ConstantsKey, StepConstants> constants_;
};
TORCH_MODULE(DecoderLm);

}  // namespace mnemo
