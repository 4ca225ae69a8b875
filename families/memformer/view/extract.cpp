// The Memformer family's extractor (its entry, families/memformer/view/entry.h): a step's
// writer attention, memory read, forget norms and memory slots from its trace (LibTorch;
// compiled into mnemo_app_lib beside app/figures/extract.cpp).
#include "families/memformer/view/entry.h"

#include "app/figures/trace_read.h"
#include "core/trace/keys.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

namespace {
using trace_read::layers_with;
using trace_read::to_vector;

float finite_max(const std::vector<float>& v, bool absolute) {
  float m = 0.f;
  for (float x : v)
    if (std::isfinite(x)) m = std::max(m, absolute ? std::fabs(x) : x);
  return m;
}

}  // namespace

void extract_memformer_step(StepData& step, const Snapshot& snap, const Document& doc, const std::string&) {
  MemformerData& d = step.memformer;
  const Trace& tr = snap.trace;
  if (tr.has(keys::kWriterAttn)) {
    const auto& attn = tr.at(keys::kWriterAttn);  // [B, H, k, 1 + Lp + C]
    const int64_t h = attn.size(1), k = attn.size(2), all = attn.size(3);
    const int64_t lp = tr.has(keys::kInputTokens) ? tr.at(keys::kInputTokens).size(1) : snap.length;
    const int64_t n_cls = std::max<int64_t>(0, all - 1 - lp);
    std::vector<int64_t> keep{0};
    for (int64_t j = 0; j < snap.length && 1 + j < all; ++j) keep.push_back(1 + j);
    for (int64_t c = 0; c < n_cls; ++c) keep.push_back(1 + lp + c);
    auto sel = attn[0].to(torch::kFloat32).index_select(2, torch::tensor(keep, torch::kInt64));  // [H, k, cols]
    auto blocks = torch::cat({sel.mean(0, true), sel}, 0);                                         // [H+1, k, cols]
    d.heads = static_cast<int>(h);
    d.slots = static_cast<int>(k);
    d.cols = static_cast<int>(keep.size());
    d.n_cls = static_cast<int>(n_cls);
    d.writer = to_vector(blocks);
    d.writer_max = finite_max(d.writer, false);
    const size_t block = static_cast<size_t>(k) * keep.size();
    for (int64_t b = 0; b <= h; ++b) {
      float lo = INFINITY, hi = -INFINITY;
      for (size_t i = static_cast<size_t>(b) * block; i < static_cast<size_t>(b + 1) * block; ++i)
        if (std::isfinite(d.writer[i])) {
          lo = std::min(lo, d.writer[i]);
          hi = std::max(hi, d.writer[i]);
        }
      d.block_min.push_back(hi >= lo ? lo : 0.f);
      d.block_max.push_back(hi >= lo ? hi : 1.f);
    }
    d.self_mass.resize(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) d.self_mass[static_cast<size_t>(i)] = d.writer[static_cast<size_t>(i * d.cols)];
    d.col_labels.reserve(keep.size());
    d.col_labels.push_back("self");
    for (int64_t j = 0; j < snap.length && 1 + j < all; ++j) {
      const int64_t t = snap.first_token + j;
      d.col_labels.push_back(t < doc.size() ? token_text(doc, t) : "?");
    }
    for (int64_t c = 0; c < n_cls; ++c) d.col_labels.push_back(n_cls == 1 ? "<cls>" : "<cls" + std::to_string(c) + ">");
  }
  if (tr.has(keys::kForgetNorm)) d.forget_norm = to_vector(tr.at(keys::kForgetNorm).flatten());
  const auto read_layers = layers_with(tr, keys::kReadAttnPrefix);
  if (!read_layers.empty()) {
    const auto& r = tr.at(keys::layer_key(keys::kReadAttnPrefix, read_layers.back()));  // [B, H, Lp, k]
    const int64_t n = std::min<int64_t>(snap.length, r.size(2));
    d.read = to_vector(r[0].to(torch::kFloat32).mean(0).narrow(0, 0, n));  // [n, k]
    d.read_layer = read_layers.back();
    if (d.slots == 0) d.slots = static_cast<int>(r.size(3));
  }
  if (tr.has(keys::kReadGate)) d.read_gate = to_vector(tr.at(keys::kReadGate).flatten());
  if (tr.has(keys::kDecoderRead)) {
    const auto& r = tr.at(keys::kDecoderRead);  // [B, L', k]
    d.decoder_read = to_vector(r[0].to(torch::kFloat32));
    if (d.slots == 0) d.slots = static_cast<int>(r.size(2));
  }
  if (tr.has(keys::kMemory)) {
    auto m = tr.at(keys::kMemory)[0].to(torch::kFloat32);  // [k, d]
    d.dim = static_cast<int>(m.size(1));
    if (d.slots == 0) d.slots = static_cast<int>(m.size(0));
    d.memory = to_vector(m);
    d.memory_absmax = finite_max(d.memory, true);
    d.slot_norm = to_vector(m.norm(2, 1));
    if (tr.has(keys::kMemoryPrev)) {
      auto p = tr.at(keys::kMemoryPrev)[0].to(torch::kFloat32);
      auto dot = (p * m).sum(1);
      auto den = p.norm(2, 1) * m.norm(2, 1);
      auto cos = torch::where(den > 0, dot / den.clamp_min(1e-30), torch::full_like(dot, NAN));
      d.cos_prev = to_vector(cos);
    }
  }
  d.present = tr.has(keys::kWriterAttn) || tr.has(keys::kForgetNorm) || !read_layers.empty() ||
              tr.has(keys::kReadGate) || tr.has(keys::kDecoderRead) || tr.has(keys::kMemory);
}

}  // namespace mnemo::app
