// Memformer (Memformer (docs/references.md#memformer), docs/models.md#memformer): encoder with memory reading in every
// layer, a slot-attention memory writer with temperature after the last encoder layer,
// biased memory normalisation (forgetting), and a decoder that predicts the next segment.
#pragma once
#include "core/models/config.h"
#include "core/models/model.h"
#include "core/nn/attention.h"

namespace mnemo {

struct MemformerEncoderLayerImpl : torch::nn::Module {
  // read_memory = false (the "w/o memory" ablation): no memory-reading sub-layer.
  // gate: the read enters as tanh(read_gate) * read, read_gate a learnt scalar that starts at 0.
  MemformerEncoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin, bool read_memory = true,
                            bool gate = false);
  // x [B, T, d]; self_mask additive [B, 1, 1, T]; memory [B, k, d] (ignored without reading).
  // read_weights receives the memory-reading attention [B, H, T, k] when non-null.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& self_mask, const torch::Tensor& memory,
                        torch::Tensor* read_weights);
  torch::nn::LayerNorm ln_self{nullptr}, ln_read{nullptr}, ln_ffn{nullptr};
  MultiHeadAttention self_attn{nullptr}, mem_read{nullptr};
  torch::Tensor read_gate;  // [1], with `gate` only
  FeedForward ffn{nullptr};
};
TORCH_MODULE(MemformerEncoderLayer);

struct MemformerDecoderLayerImpl : torch::nn::Module {
  MemformerDecoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin);
  // y [B, L, d] causal self-attention, then cross-attention to enc [B, T, d].
  // cross_weights receives the cross-attention [B, H, L, T] when non-null.
  torch::Tensor forward(const torch::Tensor& y, const torch::Tensor& causal, const torch::Tensor& enc,
                        const torch::Tensor& enc_mask, torch::Tensor* cross_weights = nullptr);
  torch::nn::LayerNorm ln_self{nullptr}, ln_cross{nullptr}, ln_ffn{nullptr};
  MultiHeadAttention self_attn{nullptr}, cross_attn{nullptr};
  FeedForward ffn{nullptr};
};
TORCH_MODULE(MemformerDecoderLayer);

// Memory writer (slot attention). Per head, slot i attends over [itself, x_1..x_T] only:
//   logits = [q_i.k_i, q_i.K_x] / sqrt(d_h);  a_i = softmax(logits / tau)
//   m'_i = a_i[self] * m_i + sum_j a_i[j] * V_x[j]   (per head on the head's slice of d)
// The self value is the slot itself, so a slot attending only to itself is unchanged.
struct MemoryWriterImpl : torch::nn::Module {
  MemoryWriterImpl(int64_t dim, int64_t heads, double temperature, const LinearOptions& lin = {});
  // memory [B, k, d], x [B, T, d], x_valid [B, T] bool. attn receives [B, H, k, 1+T]
  // (column 0 = self) when non-null. Returns m' (before forgetting).
  torch::Tensor forward(const torch::Tensor& memory, const torch::Tensor& x, const torch::Tensor& x_valid,
                        torch::Tensor* attn);
  int64_t dim, heads, head_dim;
  double temperature;
  Projection q, k, v;
};
TORCH_MODULE(MemoryWriter);

class MemformerImpl : public MemoryModelImpl {
 public:
  explicit MemformerImpl(const ModelConfig& cfg);
  std::string kind() const override { return "memformer"; }
  const ModelConfig& config() const { return cfg_; }

  // m_0^i = v_bias^i / ||v_bias^i||, expanded to [batch, k, d].
  MemoryState initial_memory(int64_t batch) override;
  // Encodes in.tokens with memory mem ("slots"), writes the next memory, and (when
  // in.next_tokens is defined) decodes the next segment with teacher forcing.
  SegmentOutput step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) override;

  // Biased memory normalisation: normalise(m' + v_bias) (forgetting on) or normalise(m').
  torch::Tensor forget(const torch::Tensor& m_prime) const;
  // Encoder over tokens (+ cls) with memory reading; returns [B, L + n_cls, d] after the
  // final norm and fills `valid` with the key mask [B, L + n_cls]. last_read, when non-null,
  // receives the last encoder layer's memory read over every row, cls included [B, H, L+C, k].
  torch::Tensor encode(const torch::Tensor& tokens, const torch::Tensor& valid, const torch::Tensor& memory,
                       torch::Tensor* enc_valid, Tracer* tracer, torch::Tensor* last_read = nullptr);
  // Decoder logits [B, L, V] for next_tokens (teacher forcing with <bos> shifted in). With a
  // tracer: memformer.cross_attn.<n> of the layers it wants, and memformer.decoder_read from
  // the last layer's cross-attention and `last_read` (encode's) when that is defined (step
  // asks encode for it only when the tracer wants memformer.decoder_read).
  torch::Tensor decode(const torch::Tensor& next_tokens, const torch::Tensor& enc, const torch::Tensor& enc_valid,
                       Tracer* tracer = nullptr, const torch::Tensor& last_read = torch::Tensor());
  // ||v_bias^i|| per slot [k].
  torch::Tensor forget_norm() const;

  torch::nn::Embedding tok_emb{nullptr}, enc_pos{nullptr}, dec_pos{nullptr};
  torch::Tensor cls;     // [n_cls, d]
  torch::Tensor v_bias;  // [k, d]
  torch::nn::ModuleList encoder{nullptr}, decoder{nullptr};
  torch::nn::LayerNorm enc_norm{nullptr}, dec_norm{nullptr};
  MemoryWriter writer{nullptr};
  torch::nn::Linear head{nullptr};

 private:
  ModelConfig cfg_;
};
TORCH_MODULE(Memformer);

}  // namespace mnemo
