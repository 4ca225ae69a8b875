#include "core/models/memformer.h"
#include "core/models/family.h"
#include "core/nn/linear.h"

#include "core/data/tokenizer.h"
#include "core/trace/analysis.h"

#include <cmath>
#include <limits>

namespace mnemo {

MemformerEncoderLayerImpl::MemformerEncoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin,
                                                     bool read_memory, bool gate) {
  ln_self = register_module("ln_self", layer_norm(dim));
  if (read_memory) ln_read = register_module("ln_read", layer_norm(dim));
  ln_ffn = register_module("ln_ffn", layer_norm(dim));
  self_attn = register_module("self_attn", MultiHeadAttention(dim, heads, lin));
  if (read_memory) mem_read = register_module("mem_read", MultiHeadAttention(dim, heads, lin));
  ffn = register_module("ffn", FeedForward(dim, ff, lin));
  if (read_memory && gate) read_gate = register_parameter("read_gate", torch::zeros({1}));
}

torch::Tensor MemformerEncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& self_mask,
                                                 const torch::Tensor& memory, torch::Tensor* read_weights) {
  auto h = ln_self->forward(x);
  auto y = x + self_attn->forward(h, h, self_mask);
  if (mem_read) {
    auto r = mem_read->forward(ln_read->forward(y), memory, torch::Tensor(), read_weights);
    y = y + (read_gate.defined() ? torch::tanh(read_gate) * r : r);
  }
  return y + ffn->forward(ln_ffn->forward(y));
}

MemformerDecoderLayerImpl::MemformerDecoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin) {
  ln_self = register_module("ln_self", layer_norm(dim));
  ln_cross = register_module("ln_cross", layer_norm(dim));
  ln_ffn = register_module("ln_ffn", layer_norm(dim));
  self_attn = register_module("self_attn", MultiHeadAttention(dim, heads, lin));
  cross_attn = register_module("cross_attn", MultiHeadAttention(dim, heads, lin));
  ffn = register_module("ffn", FeedForward(dim, ff, lin));
}

torch::Tensor MemformerDecoderLayerImpl::forward(const torch::Tensor& y, const torch::Tensor& causal,
                                                 const torch::Tensor& enc, const torch::Tensor& enc_mask,
                                                 torch::Tensor* cross_weights) {
  auto h = ln_self->forward(y);
  auto z = y + self_attn->forward(h, h, causal);
  z = z + cross_attn->forward(ln_cross->forward(z), enc, enc_mask, cross_weights);
  return z + ffn->forward(ln_ffn->forward(z));
}

MemoryWriterImpl::MemoryWriterImpl(int64_t dim_, int64_t heads_, double temperature_, const LinearOptions& lin)
    : dim(dim_), heads(heads_), head_dim(dim_ / heads_), temperature(temperature_) {
  TORCH_CHECK(dim_ % heads_ == 0, "writer: dim ", dim_, " must be divisible by heads ", heads_);
  TORCH_CHECK(temperature_ > 0, "writer: temperature must be > 0");
  q = register_projection(*this, "q", make_projection(dim, dim, lin));
  k = register_projection(*this, "k", make_projection(dim, dim, lin));
  v = register_projection(*this, "v", make_projection(dim, dim, lin));
}

torch::Tensor MemoryWriterImpl::forward(const torch::Tensor& memory, const torch::Tensor& x,
                                        const torch::Tensor& x_valid, torch::Tensor* attn) {
  const int64_t b = memory.size(0), nslots = memory.size(1), t = x.size(1);
  auto split = [&](const torch::Tensor& z, int64_t n) { return z.view({b, n, heads, head_dim}).transpose(1, 2); };
  auto qm = split(q->forward(memory), nslots);  // [B, H, k, dh]
  auto km = split(k->forward(memory), nslots);
  auto kx = split(k->forward(x), t);            // [B, H, T, dh]
  auto vx = split(v->forward(x), t);
  auto mh = split(memory, nslots);              // the slot itself is its own value
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto self_logit = (qm * km).sum(-1, /*keepdim=*/true) * scale;           // [B, H, k, 1]
  auto tok_logit = torch::matmul(qm, kx.transpose(-2, -1)) * scale;        // [B, H, k, T]
  tok_logit = tok_logit + key_padding_mask(x_valid);                       // padding never written
  auto a = torch::softmax(torch::cat({self_logit, tok_logit}, -1) / temperature, -1);
  if (attn) *attn = a;
  auto out = a.narrow(-1, 0, 1) * mh + torch::matmul(a.narrow(-1, 1, t), vx);  // [B, H, k, dh]
  return out.transpose(1, 2).contiguous().view({b, nslots, dim});
}

MemformerImpl::MemformerImpl(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  const int64_t d = cfg_.dim, ff = cfg_.ff_width();
  tok_emb = register_module("tok_emb", torch::nn::Embedding(ByteTokenizer::kVocabSize, d));
  enc_pos = register_module("enc_pos", torch::nn::Embedding(cfg_.segment_len + cfg_.n_cls, d));
  dec_pos = register_module("dec_pos", torch::nn::Embedding(cfg_.segment_len, d));
  {
    torch::NoGradGuard g;
    tok_emb->weight.normal_(0.0, 0.02);
    enc_pos->weight.normal_(0.0, 0.02);
    dec_pos->weight.normal_(0.0, 0.02);
  }
  cls = register_parameter("cls", torch::randn({cfg_.n_cls, d}) * 0.02);
  // ||v_bias^i|| starts near 1 (the paper reports trained magnitudes of about 1 to 3).
  v_bias = register_parameter("v_bias", torch::randn({cfg_.slots, d}) / std::sqrt(static_cast<double>(d)));
  encoder = register_module("encoder", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.layers; ++i) encoder->push_back(MemformerEncoderLayer(d, cfg_.heads, ff, cfg_.linear_options(), cfg_.memory,
                                                                          cfg_.memory_gate));
  decoder = register_module("decoder", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.dec_layers; ++i) decoder->push_back(MemformerDecoderLayer(d, cfg_.heads, ff, cfg_.linear_options()));
  enc_norm = register_module("enc_norm", layer_norm(d));
  dec_norm = register_module("dec_norm", layer_norm(d));
  if (cfg_.memory) writer = register_module("writer", MemoryWriter(d, cfg_.heads, cfg_.temperature, cfg_.linear_options()));
  head = register_module("head", torch::nn::Linear(d, ByteTokenizer::kVocabSize));
}

MemoryState MemformerImpl::initial_memory(int64_t batch) {
  auto m0 = torch::nn::functional::normalize(v_bias, torch::nn::functional::NormalizeFuncOptions().dim(-1));
  MemoryState s;
  s.tensors["slots"] = m0.unsqueeze(0).expand({batch, cfg_.slots, cfg_.dim}).contiguous();
  return s;
}

torch::Tensor MemformerImpl::forget(const torch::Tensor& m_prime) const {
  namespace F = torch::nn::functional;
  auto m = cfg_.forgetting ? m_prime + v_bias.unsqueeze(0) : m_prime;
  return F::normalize(m, F::NormalizeFuncOptions().dim(-1));
}

torch::Tensor MemformerImpl::forget_norm() const { return v_bias.norm(2, -1); }

torch::Tensor MemformerImpl::encode(const torch::Tensor& tokens, const torch::Tensor& valid,
                                    const torch::Tensor& memory, torch::Tensor* enc_valid, Tracer* tracer,
                                    torch::Tensor* last_read) {
  const int64_t b = tokens.size(0), l = tokens.size(1);
  TORCH_CHECK(l <= cfg_.segment_len, "segment of ", l, " tokens is longer than the model's segment_len ",
              cfg_.segment_len);
  auto x = tok_emb->forward(tokens);
  if (cfg_.n_cls > 0) x = torch::cat({x, cls.unsqueeze(0).expand({b, cfg_.n_cls, cfg_.dim})}, 1);
  x = x + enc_pos->weight.narrow(0, 0, l + cfg_.n_cls).unsqueeze(0);  // positions 0..l+C-1
  auto v = cfg_.n_cls > 0 ? torch::cat({valid, torch::ones({b, cfg_.n_cls}, valid.options())}, 1) : valid;
  auto mask = key_padding_mask(v);
  int64_t li = 0;
  const int64_t last = static_cast<int64_t>(encoder->size()) - 1;
  for (const auto& m : *encoder) {
    const std::string key = std::string(keys::kReadAttnPrefix) + std::to_string(li);
    torch::Tensor w;
    const bool want = tracer && cfg_.memory && tracer->wants(key);
    const bool keep = last_read && cfg_.memory && li == last;
    x = m->as<MemformerEncoderLayerImpl>()->forward(x, mask, memory, want || keep ? &w : nullptr);
    if (want) tracer->put(key, w.narrow(2, 0, l));  // token rows [B, H, L, k]
    if (keep) *last_read = w;                       // every row, cls included [B, H, L+C, k]
    ++li;
  }
  if (enc_valid) *enc_valid = v;
  return enc_norm->forward(x);
}

torch::Tensor MemformerImpl::decode(const torch::Tensor& next_tokens, const torch::Tensor& enc,
                                    const torch::Tensor& enc_valid, Tracer* tracer, const torch::Tensor& last_read) {
  const int64_t b = next_tokens.size(0), l = next_tokens.size(1);
  TORCH_CHECK(l <= cfg_.segment_len, "target segment longer than segment_len");
  auto dev = next_tokens.device();
  auto bos = torch::full({b, 1}, ByteTokenizer::kBos, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  auto inp = torch::cat({bos, next_tokens.narrow(1, 0, l - 1)}, 1);
  auto y = tok_emb->forward(inp) + dec_pos->weight.narrow(0, 0, l).unsqueeze(0);  // positions 0..l-1
  auto causal = causal_mask(l, dev);
  auto enc_mask = key_padding_mask(enc_valid);
  const int64_t last = static_cast<int64_t>(decoder->size()) - 1;
  int64_t n = 0;
  for (const auto& m : *decoder) {
    const std::string key = std::string(keys::kCrossAttnPrefix) + std::to_string(n);
    const bool want = tracer && tracer->wants(key);
    const bool read = tracer && last_read.defined() && n == last;  // step passes last_read only when it is wanted
    torch::Tensor w;
    y = m->as<MemformerDecoderLayerImpl>()->forward(y, causal, enc, enc_mask, want || read ? &w : nullptr);
    if (want) tracer->put(key, w);  // [B, H, L', L+C]
    // What each predicted token's row drew from the slots, through the encoder states it
    // attends to: mean over heads of the cross-attention [B, L', L+C] times the mean over
    // heads of those states' memory read [B, L+C, k]; each row sums to 1 over the slots.
    if (read) tracer->put(keys::kDecoderRead, torch::bmm(w.mean(1), last_read.mean(1)));
    ++n;
  }
  return head->forward(dec_norm->forward(y));
}

SegmentOutput MemformerImpl::step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) {
  TORCH_CHECK(in.tokens.defined() && in.tokens.dim() == 2, "tokens must be [B, L]");
  TORCH_CHECK(in.valid.defined() && in.valid.sizes() == in.tokens.sizes(), "valid must match tokens");
  const auto& slots = mem.at("slots");
  TORCH_CHECK(slots.dim() == 3 && slots.size(1) == cfg_.slots && slots.size(2) == cfg_.dim, "memory slots must be [B, ",
              cfg_.slots, ", ", cfg_.dim, "], got ", slots.sizes());
  if (tracer) {
    tracer->put_if_wanted(keys::kInputTokens, in.tokens);
    if (in.offsets.defined()) tracer->put_if_wanted(keys::kInputOffsets, in.offsets);
    tracer->put_if_wanted(keys::kMemoryPrev, slots);
  }
  // The slots as the encoder and the writer see them (the state itself stays unit-norm).
  const auto seen = cfg_.memory_scale == "sqrt_dim" ? slots * std::sqrt(static_cast<double>(cfg_.dim)) : slots;
  torch::Tensor enc_valid, last_read;
  const bool want_decoder_read = tracer && cfg_.memory && in.next_tokens.defined() && tracer->wants(keys::kDecoderRead);
  auto enc = encode(in.tokens, in.valid, seen, &enc_valid, tracer, want_decoder_read ? &last_read : nullptr);
  if (tracer) tracer->put_if_wanted(keys::kEncoderOut, enc);  // [B, L+C, d]: what the writer and decoder read

  const bool want_writer =
      tracer && cfg_.memory && (tracer->wants(keys::kWriterAttn) || tracer->wants(keys::kSlotType));
  torch::Tensor attn;
  SegmentOutput out;
  if (cfg_.memory) {
    auto m_prime = writer->forward(seen, enc, enc_valid, want_writer ? &attn : nullptr);
    out.memory.tensors["slots"] = forget(m_prime);
  } else {
    out.memory.tensors["slots"] = slots;  // "w/o memory": nothing is read or written
  }

  if (in.next_tokens.defined()) {
    TORCH_CHECK(in.next_valid.defined() && in.next_valid.sizes() == in.next_tokens.sizes(), "next_valid must match");
    out.logits = decode(in.next_tokens, enc, enc_valid, tracer, last_read);
    auto flat = torch::nn::functional::cross_entropy(
        out.logits.reshape({-1, out.logits.size(-1)}), in.next_tokens.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    auto maskf = in.next_valid.to(flat.scalar_type());
    out.token_loss = flat.view(in.next_tokens.sizes()) * maskf;
    out.loss_sum = out.token_loss.sum();
    out.loss_count = maskf.sum();
    out.loss = out.loss_sum / out.loss_count.clamp_min(1.0);
  }
  if (tracer) {
    if (want_writer) {
      tracer->put_if_wanted(keys::kWriterAttn, attn);
      if (tracer->wants(keys::kSlotType)) tracer->put(keys::kSlotType, classify_slots(attn, tracer->spec().thresholds));
    }
    tracer->put_if_wanted(keys::kMemory, out.memory.tensors["slots"]);
    if (tracer->wants(keys::kForgetNorm)) tracer->put(keys::kForgetNorm, forget_norm());
    if (cfg_.memory && cfg_.memory_gate && tracer->wants(keys::kReadGate)) {
      std::vector<torch::Tensor> g;
      for (const auto& m : *encoder) g.push_back(torch::tanh(m->as<MemformerEncoderLayerImpl>()->read_gate));
      tracer->put(keys::kReadGate, torch::cat(g));
    }
    if (out.token_loss.defined()) tracer->put_if_wanted(keys::kLmLoss, out.token_loss);
  }
  return out;
}

// Memformer's constructor in its family entry (core/models/family.h).
MemoryModel make_memformer_model(const ModelConfig& cfg) { return std::make_shared<MemformerImpl>(cfg); }

}  // namespace mnemo
