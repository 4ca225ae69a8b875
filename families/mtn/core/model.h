// Memory Transformer Network (Memory Transformer Networks (docs/references.md#mtn) §2.1, docs/models.md#mtn)
// and the paper's two baselines (§2.3).
//
//   e = M_all^{N2}( [ F_f(M_mem^{N1}(x_mem)) ; M_in^{N1}(E(x_in)) ] )          (Eq. 4)
//   (x'_mem, x'_imp) = keep_m_max(e, V_I^T e + b_I)                              (Eq. 5)
//
// In every head of every joint (N2) layer, each memory key's stored importance x_imp (from
// the previous chunk) is added to its attention logit, so back-propagation teaches V_I and
// b_I which words are worth keeping. Layers are the paper's post-LayerNorm sub-connections
// C(F)(x) = LayerNorm(x + Dropout(F(x))) (Eq. 3). Choices the paper leaves open are listed
// in docs/models.md ("Memory Transformer Network").
//
// Memory state of `mtn` (m = config slots):
//   "embeddings" [B, m, d]   kept e vectors (zeros for an empty entry)
//   "importance" [B, m]      their importance scores (0 for an empty entry)
//   "source"     [B, m] i64  index of the token each entry came from in the stream read since
//                            the initial memory (= document token index when stepping a
//                            document from its start); -1 marks an empty entry
//   "age"        [B, m] i64  chunks the entry has survived since it was kept (0 = kept from
//                            the chunk just read); -1 for an empty entry
//   "tokens_read" [B] i64    tokens read so far (source of chunk position j = tokens_read + j)
// The initial memory is m empty entries; an empty entry is masked out of every attention
// (it is never a key) and can never be kept over a real candidate.
// `mtn-naive`: "embeddings" only (the outputs at the m <MEM> positions). `no-memory`: empty.
#pragma once
#include "core/models/config.h"
#include "core/models/model.h"
#include "core/nn/attention.h"
#include "core/trace/keys.h"
#include "families/mtn/core/keys.h"

#include <vector>

namespace mnemo {

enum class MtnVariant { kMtn, kNaive, kNoMemory };

// What the chunk tokens are trained to predict (the TaskHead's kind).
//  kLanguageModel: targets = token ids (next token); the joint layers run over
//    [read memory ; chunk ; write memory]: chunk tokens read the read copy (which reads
//    memory only) and earlier chunk tokens; the write copy reads memory and the whole chunk
//    and becomes the next memory (its candidates), and no row reads it. So no position ever
//    sees its own target, yet the memory is written from the whole chunk.
//  kAnswerTagging: targets = 0/1 (answer token or not), the paper's token classification;
//    attention is bidirectional; P(answer) = sigmoid(w^T e + b); loss = class-weighted NLL
//    sum_j w_{y_j} nll_j / sum_j w_{y_j} over target_valid tokens.
// (TaskHead, core/data/segment.h; set with set_task_head.)

// Result of keep_m_max over N candidates.
struct KeptMemory {
  torch::Tensor embeddings;  // [B, m, d]
  torch::Tensor importance;  // [B, m]
  torch::Tensor source;      // [B, m] i64
  torch::Tensor age;         // [B, m] i64
  torch::Tensor index;       // [B, m] i64: which candidate each entry is, -1 when empty
};

// keep_m_max (Eq. 5): of the candidates with ok = true, keeps the m with the largest
// importance, in order of decreasing importance; equal importances keep the candidate with
// the lower index first (memory entries come before chunk tokens, earlier before later).
// Slots left over when fewer than m candidates are ok are empty (zeros, importance 0,
// source/age/index -1). `age` is carried as given (the caller adds 1 to surviving entries).
// Differentiable in embeddings and importance at the kept positions.
// emb [B, N, d], importance [B, N], ok [B, N] bool, source/age [B, N] i64.
KeptMemory keep_m_max(const torch::Tensor& emb, const torch::Tensor& importance, const torch::Tensor& ok,
                      const torch::Tensor& source, const torch::Tensor& age, int64_t m);

// Sinusoidal positional embedding of Vaswani et al. over the first `dim` dimensions:
// pe[p, 2i] = sin(p / 10000^(2i/dim)), pe[p, 2i+1] = cos(p / 10000^(2i/dim)). [n, dim].
torch::Tensor sinusoid_positions(int64_t n, int64_t dim);

// Point-wise FFN with one hidden layer (Vaswani et al.): Linear -> ReLU -> Linear.
struct MtnFeedForwardImpl : torch::nn::Module {
  MtnFeedForwardImpl(int64_t dim, int64_t ff, const LinearOptions& lin);
  torch::Tensor forward(const torch::Tensor& x);
  Projection fc1, fc2;
};
TORCH_MODULE(MtnFeedForward);

// T(x) = C(F)(C(S)(x)) with C(F)(x) = LayerNorm(x + Dropout(F(x))) (Eq. 2-3).
struct MtnLayerImpl : torch::nn::Module {
  MtnLayerImpl(int64_t dim, int64_t heads, int64_t ff, double dropout, const LinearOptions& lin);
  // x [B, T, d]; mask additive, broadcastable to [B, H, T, T] (importance and masking).
  // weights / logits, when non-null, receive the attention probabilities and the
  // pre-softmax logits q.k/sqrt(d_h) + mask, both [B, H, T, T].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights = nullptr,
                        torch::Tensor* logits = nullptr);
  MultiHeadAttention attn{nullptr};
  MtnFeedForward ffn{nullptr};
  torch::nn::LayerNorm ln_attn{nullptr}, ln_ffn{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(MtnLayer);

class MtnImpl : public MemoryModelImpl {
 public:
  static constexpr int64_t kReservedDims = 2;  // last two embedding dimensions (naive-memory flag)
  static constexpr double kDropout = 0.1;      // the paper's dropout everywhere

  MtnImpl(const ModelConfig& cfg, MtnVariant variant, double dropout = kDropout);
  std::string kind() const override;
  MtnVariant variant() const { return variant_; }
  const ModelConfig& config() const { return cfg_; }
  const TaskHead& task() const { return task_; }
  bool predicts_tokens() const override { return task_.kind == TaskHead::Kind::kLanguageModel; }
  // Throws std::invalid_argument for non-positive class weights.
  void set_task_head(const TaskHead& head) override;

  MemoryState initial_memory(int64_t batch) override;
  // Reads one chunk with memory `mem` and returns the next memory (keep_m_max for mtn, the
  // <MEM> outputs for mtn-naive). Predictions and loss on the chunk follow task(): loss when
  // in.targets is defined. A batch row whose chunk has no valid token keeps its memory
  // unchanged. To read with the memory fixed (the QA inference phase), pass the same `mem`
  // again and ignore out.memory.
  SegmentOutput step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) override;

  // E(x): sqrt(d) * word vector + sinusoid of the position in the chunk; both are zero in
  // the kReservedDims last dimensions. [B, L] -> [B, L, d].
  torch::Tensor embed(const torch::Tensor& tokens);
  // The naive baseline's initial memory: E(<MEM> x m) with the reserved dimensions set to 1.
  torch::Tensor naive_initial_memory();

  // Test hook: when set, every joint layer appends its pre-softmax logits [B, H, T, T]
  // (importance and masks included) to *sink during step(). nullptr turns it off.
  void set_logit_sink(std::vector<torch::Tensor>* sink) { logit_sink_ = sink; }

  torch::nn::Embedding tok_emb{nullptr};
  torch::nn::ModuleList chunk_layers{nullptr}, memory_layers{nullptr}, joint_layers{nullptr};
  MtnFeedForward memory_ffn{nullptr};
  torch::Tensor importance_v;  // V_I [d]
  torch::Tensor importance_b;  // b_I [1]
  torch::nn::Dropout emb_drop{nullptr};
  torch::nn::Linear lm_head{nullptr}, qa_head{nullptr};

 private:
  ModelConfig cfg_;
  MtnVariant variant_;
  TaskHead task_;
  std::vector<torch::Tensor>* logit_sink_ = nullptr;
};
TORCH_MODULE(Mtn);

}  // namespace mnemo
