#include "core/models/decoder_lm.h"
#include "core/models/family.h"
#include "core/nn/linear.h"

#include "core/data/tokenizer.h"

namespace mnemo {

DecoderLmImpl::StepConstants DecoderLmImpl::step_constants(const SequenceLayout& lay, torch::Device device) {
  const ConstantsKey key{lay.tokens, static_cast<int>(device.type()), device.index()};
  if (auto it = constants_.find(key); it != constants_.end()) return it->second;
  c10::InferenceMode normal_tensors(false);  // usable by autograd later, also when made under InferenceMode
  torch::NoGradGuard no_grad;
  StepConstants c{decoder_mask_parts(lay, device), relative_positions(lay.rows(), lay.cols(), cfg_.dim, device)};
  if (constants_.size() >= 16) constants_.clear();  // a few lengths in practice
  constants_.emplace(key, c);
  return c;
}

namespace {

// The last `keep` rows (dim 1) of [a | b].
torch::Tensor keep_last(const torch::Tensor& a, const torch::Tensor& b, int64_t keep) {
  auto cat = torch::cat({a, b}, 1);
  return cat.narrow(1, cat.size(1) - keep, keep);
}
}  // namespace

DecoderLayerImpl::DecoderLayerImpl(int64_t dim, int64_t heads, int64_t ff, const LinearOptions& lin) {
  ln_attn = register_module("ln_attn", layer_norm(dim));
  ln_ffn = register_module("ln_ffn", layer_norm(dim));
  attn = register_module("attn", RelMultiHeadAttention(dim, heads, lin));
  ffn = register_module("ffn", FeedForward(dim, ff, lin));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& prefix,
                                        const RelativePositions& rel, const torch::Tensor& mask,
                                        torch::Tensor* weights) {
  auto h = ln_attn->forward(x);
  auto kv = prefix.defined() ? torch::cat({ln_attn->forward(prefix), h}, 1) : h;
  auto y = x + attn->forward(h, kv, rel, mask, weights);
  return y + ffn->forward(ln_ffn->forward(y));
}

DecoderLmImpl::DecoderLmImpl(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  const ModelCapabilities& caps = capabilities_of(cfg_.model);
  const MemoryKind mk = caps.memory;
  TORCH_CHECK(caps.architecture == Architecture::kDecoderOnly,
              "DecoderLm: model kind '", cfg_.model, "' is not a decoder-only kind");
  TORCH_CHECK(cfg_.dim % 2 == 0, "DecoderLm: dim must be even (sinusoid position table)");
  if (mk == MemoryKind::kCache) c_ = cfg_.cache_len < 0 ? cfg_.slots : cfg_.cache_len;  // trxl: -1 = slots
  if (mk == MemoryKind::kCacheAndTokens) c_ = cfg_.cache_len < 0 ? cfg_.segment_len : cfg_.cache_len;
  if (mk == MemoryKind::kMemoryTokens || mk == MemoryKind::kCacheAndTokens) m_ = cfg_.slots;
  read_block_ = caps.rmt_read_block;

  const int64_t d = cfg_.dim;
  tok_emb = register_module("tok_emb", torch::nn::Embedding(ByteTokenizer::kVocabSize, d));
  if (m_ > 0) {
    memory_init = register_parameter("memory_init", torch::randn({m_, d}));
    if (read_block_) read_emb = register_parameter("read_emb", torch::randn({m_, d}));
    write_emb = register_parameter("write_emb", torch::randn({m_, d}));
    mem_norm = register_module("mem_norm", layer_norm(d));
  }
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.layers; ++i)
    layers->push_back(DecoderLayer(d, cfg_.heads, cfg_.ff_width(), cfg_.linear_options()));
  norm = register_module("norm", layer_norm(d));
  head = register_module("head", torch::nn::Linear(d, ByteTokenizer::kVocabSize));
}

MemoryState DecoderLmImpl::initial_memory(int64_t batch) {
  MemoryState s;
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device());
  if (m_ > 0) s.tensors["memory"] = memory_init.unsqueeze(0).expand({batch, m_, cfg_.dim});
  if (c_ > 0) {
    for (int64_t l = 0; l < cfg_.layers; ++l) s.tensors["cache." + std::to_string(l)] = torch::zeros({batch, c_, cfg_.dim}, opts);
    s.tensors["cache_valid"] = torch::zeros({batch, c_}, opts);
  }
  if (write_only()) {
    for (int64_t l = 0; l < cfg_.layers; ++l)
      s.tensors["write_cache." + std::to_string(l)] = torch::zeros({batch, m_, cfg_.dim}, opts);
    s.tensors["write_cache_valid"] = torch::zeros({batch, m_}, opts);
  }
  return s;
}

DecoderRun DecoderLmImpl::run(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) {
  TORCH_CHECK(in.tokens.defined() && in.tokens.dim() == 2, "tokens must be [B, L]");
  TORCH_CHECK(in.valid.defined() && in.valid.sizes() == in.tokens.sizes(), "valid must match tokens");
  const int64_t b = in.tokens.size(0), l = in.tokens.size(1), d = cfg_.dim;
  TORCH_CHECK(l >= 1 && l <= cfg_.segment_len, "segment of ", l, " tokens; the model's segment_len is ",
              cfg_.segment_len);
  auto dev = in.tokens.device();

  DecoderRun run;
  SequenceLayout& lay = run.layout;
  lay.read = read_block_ ? m_ : 0;
  lay.tokens = l;
  lay.write = m_;
  lay.prefix = write_only() ? m_ : c_;
  const int64_t t = lay.rows(), p = lay.prefix, r = lay.read;

  std::vector<torch::Tensor> parts;
  torch::Tensor memory;
  if (m_ > 0) {
    memory = mem.at("memory");
    TORCH_CHECK(memory.dim() == 3 && memory.size(0) == b && memory.size(1) == m_ && memory.size(2) == d,
                "memory must be [", b, ", ", m_, ", ", d, "], got ", memory.sizes());
    if (read_block_) parts.push_back(memory + read_emb.unsqueeze(0));
  }
  parts.push_back(tok_emb->forward(in.tokens));
  if (m_ > 0) parts.push_back(memory + write_emb.unsqueeze(0));
  auto x = torch::cat(parts, 1);
  run.input = x;

  torch::Tensor prefix_valid;
  if (c_ > 0) prefix_valid = mem.at("cache_valid");
  if (write_only()) prefix_valid = mem.at("write_cache_valid");
  const StepConstants constants = step_constants(lay, dev);
  auto mask = decoder_attention_mask(lay, constants.mask, prefix_valid, in.valid);
  const RelativePositions& rel = constants.rel;

  if (tracer) {
    tracer->put_if_wanted(keys::kInputTokens, in.tokens);
    if (in.offsets.defined()) tracer->put_if_wanted(keys::kInputOffsets, in.offsets);
    if (m_ > 0) tracer->put_if_wanted(keys::kRmtMemoryPrev, memory);
  }

  auto valid_f = in.valid.to(torch::kFloat32);
  for (int64_t li = 0; li < cfg_.layers; ++li) {
    const std::string ls = std::to_string(li);
    torch::Tensor prefix;
    if (c_ > 0) {
      prefix = mem.at("cache." + ls);
      TORCH_CHECK(prefix.dim() == 3 && prefix.size(0) == b && prefix.size(1) == c_, "cache.", ls, " must be [", b, ", ",
                  c_, ", ", d, "]");
      // Stop-gradient: the next segment sees these states as constants.
      run.memory.tensors["cache." + ls] = keep_last(prefix, x.narrow(1, r, l), c_).detach();
    }
    if (write_only()) {
      prefix = mem.at("write_cache." + ls);
      run.memory.tensors["write_cache." + ls] = x.narrow(1, l, m_);  // this layer's write-block input
    }
    const std::string attn_key = keys::kRmtAttnPrefix + ls, mass_key = keys::kRmtBlockMassPrefix + ls,
                      trxl_key = keys::kTrxlAttnPrefix + ls;
    const bool want_rmt = m_ > 0 && tracer && (tracer->wants(attn_key) || tracer->wants(mass_key));
    const bool want_trxl = (!read_block_ || c_ > 0) && !write_only() && tracer && tracer->wants(trxl_key);
    torch::Tensor w;
    x = layers->ptr(li)->as<DecoderLayerImpl>()->forward(x, prefix, rel, mask, want_rmt || want_trxl ? &w : nullptr);
    if (want_trxl) tracer->put(trxl_key, w.narrow(2, r, l));
    if (want_rmt) {
      torch::Tensor a;  // [B, H, 2m + L, 2m + L] in the order [read, tokens, write]
      if (read_block_) {
        a = w.narrow(3, p, t);
      } else {  // write-only: the "read" block is the previous write block (the prefix); it has no rows
        a = torch::zeros({b, w.size(1), 2 * m_ + l, 2 * m_ + l}, w.options());
        a.narrow(2, m_, l + m_).copy_(w);
      }
      tracer->put_if_wanted(attn_key, a);
      if (tracer->wants(mass_key)) tracer->put(mass_key, rmt_block_mass(a, m_, in.valid));
    }
  }
  if (c_ > 0) run.memory.tensors["cache_valid"] = keep_last(mem.at("cache_valid"), valid_f, c_);
  if (write_only()) run.memory.tensors["write_cache_valid"] = torch::ones({b, m_}, valid_f.options());
  run.hidden = x;
  run.logits = head->forward(norm->forward(x.narrow(1, r, l)));
  if (m_ > 0) {
    run.memory.tensors["memory"] = mem_norm->forward(x.narrow(1, r + l, m_));
    if (tracer) tracer->put_if_wanted(keys::kRmtMemory, run.memory.tensors["memory"]);
  }
  return run;
}

SegmentOutput DecoderLmImpl::step(const SegmentInput& in, const MemoryState& mem, Tracer* tracer) {
  DecoderRun run = this->run(in, mem, tracer);
  SegmentOutput out;
  out.logits = run.logits;
  out.memory = std::move(run.memory);
  if (in.targets.defined()) {
    TORCH_CHECK(in.targets.sizes() == in.tokens.sizes(), "targets must be [B, L] like tokens");
    TORCH_CHECK(in.target_valid.defined() && in.target_valid.sizes() == in.targets.sizes(),
                "target_valid must match targets");
    namespace F = torch::nn::functional;
    auto flat = F::cross_entropy(out.logits.reshape({-1, out.logits.size(-1)}),
                                 in.targets.reshape({-1}).clamp(0, out.logits.size(-1) - 1),
                                 F::CrossEntropyFuncOptions().reduction(torch::kNone));
    auto maskf = in.target_valid.to(flat.scalar_type());
    out.token_loss = flat.view(in.targets.sizes()) * maskf;
    out.loss_sum = out.token_loss.sum();
    out.loss_count = maskf.sum();
    out.loss = out.loss_sum / out.loss_count.clamp_min(1.0);
    if (tracer) tracer->put_if_wanted(keys::kLmLoss, out.token_loss);
  }
  return out;
}

// The decoder-LM family's constructor (core/models/family.h): RMT, Transformer-XL, both, the transformer.
MemoryModel make_decoder_lm_model(const ModelConfig& cfg) { return std::make_shared<DecoderLmImpl>(cfg); }

}  // namespace mnemo
