#include "families/mtn/core/model.h"
#include "families/mtn/core/family.h"
#include "core/nn/linear.h"

#include "core/data/tokenizer.h"
#include "core/nn/torch_compat.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace mnemo {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();


// A query row whose keys are all masked would give NaN; such rows (an all-empty memory, a
// chunk of padding only) get a zero row instead. Their outputs are never used: empty
// entries are never keys and never kept, padding is never a target.
torch::Tensor safe_rows(const torch::Tensor& mask) {
  auto dead = std::get<0>(mask.max(-1, /*keepdim=*/true)) == kNegInf;
  return mask.masked_fill(dead, 0.0);
}

// [B, N] bool -> additive [B, N] of dtype `type` (0 allowed, -inf masked).
torch::Tensor additive(const torch::Tensor& ok, torch::ScalarType type) {
  return torch::zeros(ok.sizes(), torch::TensorOptions().dtype(type).device(ok.device()))
      .masked_fill(ok.logical_not(), kNegInf);
}

}  // namespace

KeptMemory keep_m_max(const torch::Tensor& emb, const torch::Tensor& importance, const torch::Tensor& ok,
                      const torch::Tensor& source, const torch::Tensor& age, int64_t m) {
  TORCH_CHECK(emb.dim() == 3, "keep_m_max: emb must be [B, N, d], got ", emb.sizes());
  const int64_t b = emb.size(0), n = emb.size(1), d = emb.size(2);
  TORCH_CHECK(importance.sizes() == torch::IntArrayRef({b, n}), "keep_m_max: importance must be [B, N]");
  TORCH_CHECK(ok.sizes() == importance.sizes() && ok.scalar_type() == torch::kBool, "keep_m_max: ok must be [B, N] bool");
  TORCH_CHECK(source.sizes() == importance.sizes() && age.sizes() == importance.sizes(),
              "keep_m_max: source and age must be [B, N]");
  TORCH_CHECK(m >= 0 && m <= n, "keep_m_max: cannot keep ", m, " of ", n, " candidates");
  // Rank on a copy without gradient: candidates that are not ok, and NaN scores, rank last.
  auto score = importance.detach().to(torch::kFloat64);
  score = score.masked_fill(ok.logical_not() | torch::isnan(score), kNegInf);
  // Stable sort: equal scores keep index order, so the lower index wins a tie.
  auto sorted = torch::sort(score, /*stable=*/true, /*dim=*/1, /*descending=*/true);
  auto idx = std::get<1>(sorted).narrow(1, 0, m).contiguous();  // [B, m]
  auto kept_ok = ok.gather(1, idx);
  auto empty = kept_ok.logical_not();
  KeptMemory k;
  k.embeddings = emb.gather(1, idx.unsqueeze(-1).expand({b, m, d})).masked_fill(empty.unsqueeze(-1), 0.0);
  k.importance = importance.gather(1, idx).masked_fill(empty, 0.0);
  k.source = source.gather(1, idx).masked_fill(empty, -1);
  k.age = age.gather(1, idx).masked_fill(empty, -1);
  k.index = idx.masked_fill(empty, -1);
  return k;
}

torch::Tensor sinusoid_positions(int64_t n, int64_t dim) {
  auto opt = torch::TensorOptions().dtype(torch::kFloat64);
  auto pos = torch::arange(n, opt).unsqueeze(1);                       // [n, 1]
  auto k = torch::arange(dim, torch::TensorOptions().dtype(torch::kInt64));
  auto two_i = torch::div(k, 2, "floor").to(torch::kFloat64) * 2.0;    // 2i for dims 2i and 2i+1
  auto div = torch::pow(10000.0, two_i / static_cast<double>(std::max<int64_t>(dim, 1)));
  auto angle = pos / div.unsqueeze(0);                                 // [n, dim]
  auto even = (k % 2 == 0).unsqueeze(0);
  return torch::where(even, torch::sin(angle), torch::cos(angle)).to(torch::kFloat32);
}

MtnFeedForwardImpl::MtnFeedForwardImpl(int64_t dim, int64_t ff, const LinearOptions& lin) {
  fc1 = register_projection(*this, "fc1", make_projection(dim, ff, lin));
  fc2 = register_projection(*this, "fc2", make_projection(ff, dim, lin));
}

torch::Tensor MtnFeedForwardImpl::forward(const torch::Tensor& x) { return fc2->forward(torch::relu(fc1->forward(x))); }

MtnLayerImpl::MtnLayerImpl(int64_t dim, int64_t heads, int64_t ff, double dropout, const LinearOptions& lin) {
  attn = register_module("attn", MultiHeadAttention(dim, heads, lin));
  ffn = register_module("ffn", MtnFeedForward(dim, ff, lin));
  ln_attn = register_module("ln_attn", layer_norm(dim));
  ln_ffn = register_module("ln_ffn", layer_norm(dim));
  drop = register_module("drop", torch::nn::Dropout(torch::nn::DropoutOptions(dropout)));
}

torch::Tensor MtnLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights,
                                    torch::Tensor* logits) {
  auto qh = attn->split_heads(attn->q->forward(x));
  auto kh = attn->split_heads(attn->k->forward(x));
  auto vh = attn->split_heads(attn->v->forward(x));
  torch::Tensor ctx;
  if (logits) {
    // Explicit path: the same computation as attention_core, with the logits kept.
    auto s = torch::matmul(qh, kh.transpose(-2, -1)) / std::sqrt(static_cast<double>(qh.size(-1)));
    if (mask.defined()) s = s + mask;
    *logits = s;
    auto p = torch::softmax(s, -1);
    if (weights) *weights = p;
    ctx = torch::matmul(p, vh);
  } else {
    ctx = attention_core(qh, kh, vh, mask, weights);
  }
  auto h = ln_attn->forward(x + drop->forward(attn->o->forward(attn->merge_heads(ctx))));
  return ln_ffn->forward(h + drop->forward(ffn->forward(h)));
}

MtnImpl::MtnImpl(const ModelConfig& cfg, MtnVariant variant, double dropout) : cfg_(cfg), variant_(variant) {
  cfg_.validate();
  if (cfg_.dim <= kReservedDims + 1)
    throw field_error("dim", "= " + std::to_string(cfg_.dim) + " is too small for " + kind() +
                      ": it needs dim >= 4 (two embedding dimensions are reserved)");
  if (!(dropout >= 0.0 && dropout < 1.0)) throw std::invalid_argument("mtn: dropout must be in [0, 1)");
  const int64_t d = cfg_.dim, ff = cfg_.ff_width(), h = cfg_.heads;
  const auto lin = cfg_.linear_options();
  tok_emb = register_module("tok_emb", torch::nn::Embedding(ByteTokenizer::kVocabSize, d - kReservedDims));
  {
    torch::NoGradGuard g;
    tok_emb->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(d)));  // sqrt(d) * w ~ N(0, 1)
  }
  emb_drop = register_module("emb_drop", torch::nn::Dropout(torch::nn::DropoutOptions(dropout)));
  chunk_layers = register_module("chunk_layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.n1_layers; ++i) chunk_layers->push_back(MtnLayer(d, h, ff, dropout, lin));
  if (variant_ != MtnVariant::kNoMemory) {
    memory_layers = register_module("memory_layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < cfg_.n1_layers; ++i) memory_layers->push_back(MtnLayer(d, h, ff, dropout, lin));
    memory_ffn = register_module("memory_ffn", MtnFeedForward(d, ff, lin));
  }
  joint_layers = register_module("joint_layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.n2_layers; ++i) joint_layers->push_back(MtnLayer(d, h, ff, dropout, lin));
  if (variant_ == MtnVariant::kMtn) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(d));
    importance_v = register_parameter("importance_v", torch::empty({d}).uniform_(-bound, bound));
    importance_b = register_parameter("importance_b", torch::zeros({1}));
  }
  lm_head = register_module("lm_head", torch::nn::Linear(d, ByteTokenizer::kVocabSize));
  qa_head = register_module("qa_head", torch::nn::Linear(d, 1));
}

std::string MtnImpl::kind() const {
  switch (variant_) {
    case MtnVariant::kMtn: return "mtn";
    case MtnVariant::kNaive: return "mtn-naive";
    case MtnVariant::kNoMemory: return "no-memory";
  }
  return "mtn";
}

void MtnImpl::set_task_head(const TaskHead& head) {
  if (!(head.other_weight > 0.0) || !(head.answer_weight > 0.0) || !std::isfinite(head.other_weight) ||
      !std::isfinite(head.answer_weight))
    throw std::invalid_argument("mtn task: class weights must be finite and > 0");
  task_ = head;
}

torch::Tensor MtnImpl::embed(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "embed: tokens must be [B, L]");
  const int64_t b = tokens.size(0), l = tokens.size(1), d = cfg_.dim;
  auto w = tok_emb->forward(tokens) * std::sqrt(static_cast<double>(d));
  auto pe = sinusoid_positions(l, d - kReservedDims).to(w.device(), w.scalar_type());
  auto x = w + pe.unsqueeze(0);
  return torch::cat({x, torch::zeros({b, l, kReservedDims}, x.options())}, -1);
}

torch::Tensor MtnImpl::naive_initial_memory() {
  auto dev = tok_emb->weight.device();
  auto mem_tokens = torch::full({1, cfg_.slots}, ByteTokenizer::kMem, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  auto x = embed(mem_tokens);  // [1, m, d]
  auto flag = torch::zeros({cfg_.dim}, x.options());
  flag.narrow(0, cfg_.dim - kReservedDims, kReservedDims).fill_(1.0);
  return x + flag;
}

MemoryState MtnImpl::initial_memory(int64_t batch) {
  MemoryState s;
  auto dev = device();
  auto f = torch::TensorOptions().dtype(tok_emb->weight.scalar_type()).device(dev);
  auto i = torch::TensorOptions().dtype(torch::kInt64).device(dev);
  const int64_t m = cfg_.slots;
  switch (variant_) {
    case MtnVariant::kMtn:
      s.tensors["embeddings"] = torch::zeros({batch, m, cfg_.dim}, f);
      s.tensors["importance"] = torch::zeros({batch, m}, f);
      s.tensors["source"] = torch::full({batch, m}, -1, i);
      s.tensors["age"] = torch::full({batch, m}, -1, i);
      s.tensors["tokens_read"] = torch::zeros({batch}, i);
      break;
    case MtnVariant::kNaive:
      s.tensors["embeddings"] = naive_initial_memory().expand({batch, m, cfg_.dim}).contiguous();
      break;
    case MtnVariant::kNoMemory:
      break;
  }
  return s;
}

SegmentOutput MtnImpl::step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) {
  TORCH_CHECK(in.tokens.defined() && in.tokens.dim() == 2, "tokens must be [B, L]");
  TORCH_CHECK(in.valid.defined() && in.valid.sizes() == in.tokens.sizes() && in.valid.scalar_type() == torch::kBool,
              "valid must be [B, L] bool like tokens");
  const int64_t b = in.tokens.size(0), l = in.tokens.size(1), d = cfg_.dim;
  const auto dev = in.tokens.device();
  const bool lm = task_.kind == TaskHead::Kind::kLanguageModel;
  const auto& valid = in.valid;
  if (tracer) {
    tracer->put_if_wanted(keys::kInputTokens, in.tokens);
    if (in.offsets.defined()) tracer->put_if_wanted(keys::kInputOffsets, in.offsets);
  }

  // Chunk: E(x_in) through the N1 chunk layers.
  auto x = emb_drop->forward(embed(in.tokens));
  auto chunk_mask = key_padding_mask(valid);  // [B, 1, 1, L]
  if (lm) chunk_mask = chunk_mask + causal_mask(l, dev);
  chunk_mask = safe_rows(chunk_mask);
  for (const auto& layer : *chunk_layers) x = layer->as<MtnLayerImpl>()->forward(x, chunk_mask);

  // Memory: N1 memory layers, the FFN without residual, then [memory ; chunk].
  int64_t m = 0;
  torch::Tensor z, joint_mask, mem_ok, mem_emb;
  if (variant_ == MtnVariant::kNoMemory) {
    z = x;
    joint_mask = chunk_mask;
  } else {
    mem_emb = mem.at("embeddings");
    TORCH_CHECK(mem_emb.dim() == 3 && mem_emb.size(0) == b && mem_emb.size(1) == cfg_.slots && mem_emb.size(2) == d,
                "memory embeddings must be [", b, ", ", cfg_.slots, ", ", d, "], got ", mem_emb.sizes());
    m = mem_emb.size(1);
    torch::Tensor key_bias;  // [B, m]: what joint layers add to each memory key's logit
    if (variant_ == MtnVariant::kMtn) {
      const auto& src = mem.at("source");
      const auto& imp = mem.at("importance");
      TORCH_CHECK(src.sizes() == torch::IntArrayRef({b, m}) && imp.sizes() == src.sizes(),
                  "memory source and importance must be [B, m]");
      mem_ok = src >= 0;
      key_bias = imp.masked_fill(mem_ok.logical_not(), kNegInf);
      if (tracer) tracer->put_if_wanted(keys::kMtnImportancePrev, imp.masked_fill(mem_ok.logical_not(), 0.0));
    } else {
      mem_ok = torch::ones({b, m}, torch::TensorOptions().dtype(torch::kBool).device(dev));
      key_bias = torch::zeros({b, m}, mem_emb.options());
    }
    auto y = mem_emb;
    auto mem_mask = safe_rows(key_padding_mask(mem_ok));
    for (const auto& layer : *memory_layers) y = layer->as<MtnLayerImpl>()->forward(y, mem_mask);
    y = memory_ffn->forward(y);
    auto bias = torch::cat({key_bias, additive(valid, key_bias.scalar_type())}, 1);  // [B, m + L]
    if (!lm) {
      // [memory ; chunk], every row reads every key.
      z = torch::cat({y, x}, 1);
      joint_mask = bias.view({b, 1, 1, m + l});
    } else {
      // [read memory ; chunk ; write memory]: the chunk reads a copy of the memory that
      // itself reads memory only, and earlier chunk tokens; the write copy reads memory and
      // the whole chunk like memory rows in the bidirectional case, and nobody reads it.
      // So no chunk position sees its target, and the next memory still sees the chunk.
      const int64_t t = 2 * m + l;
      z = torch::cat({y, x, y}, 1);
      auto ninf = torch::full({b, 1, 1, t}, kNegInf, bias.options());
      auto read_cols = ninf.clone(), chunk_cols = ninf.clone(), write_cols = ninf.clone();
      read_cols.narrow(3, 0, m).copy_(key_bias.view({b, 1, 1, m}));
      chunk_cols.narrow(3, 0, m + l).copy_(bias.view({b, 1, 1, m + l}));
      write_cols.narrow(3, m, l).copy_(bias.narrow(1, m, l).view({b, 1, 1, l}));
      write_cols.narrow(3, m + l, m).copy_(key_bias.view({b, 1, 1, m}));
      auto causal = torch::zeros({1, 1, l, t}, bias.options());
      causal.narrow(3, m, l).copy_(causal_mask(l, dev).view({1, 1, l, l}));
      joint_mask = torch::cat({read_cols.expand({b, 1, m, t}), chunk_cols + causal, write_cols.expand({b, 1, m, t})}, 2);
    }
    joint_mask = safe_rows(joint_mask);
  }

  if (tracer && tracer->wants(keys::kMtnBlocks)) {
    const int64_t write = lm && m > 0 ? m : 0;
    tracer->put(keys::kMtnBlocks, torch::tensor({m, l, write}, torch::kInt64));
  }

  // N2 joint layers.
  int64_t li = 0;
  for (const auto& layer : *joint_layers) {
    const std::string key = std::string(keys::kMtnJointAttnPrefix) + std::to_string(li);
    const bool want = tracer && tracer->wants(key);
    torch::Tensor w, s;
    z = layer->as<MtnLayerImpl>()->forward(z, joint_mask, want ? &w : nullptr, logit_sink_ ? &s : nullptr);
    if (want) tracer->put(key, w);
    if (logit_sink_) logit_sink_->push_back(s);
    ++li;
  }
  // e: the rows that become the next memory or its candidates, then the chunk.
  auto e = lm && m > 0 ? torch::cat({z.narrow(1, m + l, m), z.narrow(1, m, l)}, 1) : z;
  if (tracer) tracer->put_if_wanted(keys::kMtnOutput, e);

  // Task head on the chunk positions.
  SegmentOutput out;
  auto e_chunk = z.narrow(1, m, l);
  const bool has_targets = in.targets.defined();
  torch::Tensor tmask;
  if (has_targets) {
    TORCH_CHECK(in.targets.sizes() == in.tokens.sizes(), "targets must be [B, L] like tokens");
    TORCH_CHECK(in.target_valid.defined() && in.target_valid.sizes() == in.tokens.sizes(),
                "target_valid must be [B, L] like tokens");
    tmask = in.target_valid.logical_and(valid);
  }
  if (lm) {
    out.logits = lm_head->forward(e_chunk);  // [B, L, V]
    if (has_targets) {
      auto flat = torch::nn::functional::cross_entropy(
          out.logits.reshape({-1, out.logits.size(-1)}), in.targets.reshape({-1}).clamp(0, out.logits.size(-1) - 1),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
      auto mf = tmask.to(flat.scalar_type());
      out.token_loss = flat.view({b, l}) * mf;
      out.loss_sum = out.token_loss.sum();
      out.loss_count = mf.sum();
      out.loss = out.loss_sum / out.loss_count.clamp_min(1.0);
      if (tracer) tracer->put_if_wanted(keys::kLmLoss, out.token_loss);
    }
  } else {
    auto a = qa_head->forward(e_chunk).squeeze(-1);  // [B, L] answer logit
    out.logits = torch::stack({torch::zeros_like(a), a}, -1);  // [B, L, 2]: softmax = (1 - p, p)
    if (tracer) tracer->put_if_wanted(keys::kQaAnswerProb, torch::sigmoid(a));
    if (has_targets) {
      auto y = in.targets;
      TORCH_CHECK(((y == 0) | (y == 1) | tmask.logical_not()).all().item<bool>(),
                  "answer tagging targets must be 0 or 1 where target_valid");
      auto pos = (y == 1).logical_and(tmask);
      // -log p(y): softplus(-a) for answers, softplus(a) otherwise.
      auto nll = torch::where(pos, torch::nn::functional::softplus(-a), torch::nn::functional::softplus(a));
      auto mf = tmask.to(nll.scalar_type());
      auto w = torch::where(pos, torch::full_like(a, task_.answer_weight), torch::full_like(a, task_.other_weight)) * mf;
      out.token_loss = nll * mf;
      out.loss_sum = (w * nll).sum();
      out.loss_count = w.sum();
      out.loss = out.loss_sum / out.loss_count.clamp_min(1e-12);
      if (tracer) tracer->put_if_wanted(keys::kQaLoss, out.token_loss);
    }
  }

  // Memory update.
  auto row_read = valid.any(1);  // [B]: rows whose chunk has a real token
  if (variant_ == MtnVariant::kMtn) {
    auto imp_all = torch::matmul(e, importance_v) + importance_b;  // [B, m + L]
    auto ok = torch::cat({mem_ok, valid}, 1);
    const auto& read = mem.at("tokens_read");
    auto pos = torch::arange(l, torch::TensorOptions().dtype(torch::kInt64).device(dev)).unsqueeze(0);
    auto chunk_src = (read.unsqueeze(1) + pos).masked_fill(valid.logical_not(), -1);
    auto src_all = torch::cat({mem.at("source"), chunk_src}, 1);
    auto age_all = torch::cat({mem.at("age") + 1, torch::zeros({b, l}, chunk_src.options())}, 1);
    auto kept = keep_m_max(e, imp_all, ok, src_all, age_all, m);
    auto r2 = row_read.unsqueeze(1), r3 = row_read.view({b, 1, 1});
    out.memory.tensors["embeddings"] = torch::where(r3, kept.embeddings, mem_emb);
    out.memory.tensors["importance"] = torch::where(r2, kept.importance, mem.at("importance"));
    out.memory.tensors["source"] = torch::where(r2, kept.source, mem.at("source"));
    out.memory.tensors["age"] = torch::where(r2, kept.age, mem.at("age"));
    out.memory.tensors["tokens_read"] = read + row_read.to(torch::kInt64) * l;
    if (tracer) {
      tracer->put_if_wanted(keys::kMtnImportance, imp_all.masked_fill(ok.logical_not(), 0.0));
      tracer->put_if_wanted(keys::kMtnCandidateSource, src_all.masked_fill(ok.logical_not(), -1));
      tracer->put_if_wanted(keys::kMtnKeptSource, out.memory.tensors["source"]);
      tracer->put_if_wanted(keys::kMtnKeptImportance, out.memory.tensors["importance"]);
      tracer->put_if_wanted(keys::kMtnAge, out.memory.tensors["age"]);
      tracer->put_if_wanted(keys::kMtnKeptIndex, torch::where(r2, kept.index, torch::full_like(kept.index, -1)));
    }
  } else if (variant_ == MtnVariant::kNaive) {
    out.memory.tensors["embeddings"] = torch::where(row_read.view({b, 1, 1}), e.narrow(1, 0, m), mem_emb);
  }
  return out;
}

// The MTN family's constructor (families/mtn/core/family.h): the variant is the kind's memory.
MemoryModel make_mtn_model(const ModelConfig& cfg) {
  const MemoryKind m = capabilities_of(cfg.model).memory;
  const MtnVariant v = m == MemoryKind::kKeptTokens       ? MtnVariant::kMtn
                       : m == MemoryKind::kLearnedVectors ? MtnVariant::kNaive
                                                          : MtnVariant::kNoMemory;
  return std::make_shared<MtnImpl>(cfg, v);
}

}  // namespace mnemo
