#include "app/gui/session.h"

#include "app/figures.h"
#include "core/trace/analysis.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

namespace {
std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
float finite_max(const std::vector<float>& v, bool absolute) {
  float m = 0.f;
  for (float x : v)
    if (std::isfinite(x)) m = std::max(m, absolute ? std::fabs(x) : x);
  return m;
}
}  // namespace

const float* StepData::writer_block(int head) const {
  if (!has_writer()) return nullptr;
  const int b = head < 0 || head >= heads ? 0 : head + 1;
  return writer.data() + static_cast<size_t>(b) * static_cast<size_t>(slots) * static_cast<size_t>(cols);
}

StepData make_step_data(SnapshotPtr snap, const Document& doc) {
  StepData d;
  d.snap = snap;
  if (!snap) return d;
  torch::NoGradGuard no_grad;
  d.segment = snap->segment;
  d.num_segments = snap->num_segments;
  d.first_token = snap->first_token;
  d.length = snap->length;
  d.loss = snap->loss;
  d.non_finite = snap->non_finite;
  d.non_finite_key = snap->non_finite_key;
  const Trace& tr = snap->trace;

  if (tr.has(keys::kWriterAttn)) {
    const auto& attn = tr.at(keys::kWriterAttn);  // [B, H, k, 1 + Lp + C]
    const int64_t h = attn.size(1), k = attn.size(2), all = attn.size(3);
    const int64_t lp = tr.has(keys::kInputTokens) ? tr.at(keys::kInputTokens).size(1) : snap->length;
    const int64_t n_cls = std::max<int64_t>(0, all - 1 - lp);
    std::vector<int64_t> keep{0};
    for (int64_t j = 0; j < snap->length && 1 + j < all; ++j) keep.push_back(1 + j);
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
    for (int64_t j = 0; j < snap->length && 1 + j < all; ++j) {
      const int64_t t = snap->first_token + j;
      d.col_labels.push_back(t < doc.size() ? token_text(doc, t) : "?");
    }
    for (int64_t c = 0; c < n_cls; ++c) d.col_labels.push_back(n_cls == 1 ? "<cls>" : "<cls" + std::to_string(c) + ">");
  }
  if (tr.has(keys::kForgetNorm)) d.forget_norm = to_vector(tr.at(keys::kForgetNorm).flatten());
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
  if (tr.has(keys::kLmLoss)) {
    auto l = tr.at(keys::kLmLoss)[0];
    const int64_t next_first = snap->first_token + l.size(0);
    const int64_t next_len = std::max<int64_t>(0, std::min<int64_t>(l.size(0), doc.size() - next_first));
    if (snap->segment + 1 < snap->num_segments && next_len > 0) d.next_loss = to_vector(l.slice(0, 0, next_len));
  }
  return d;
}

float SessionView::token_loss(int64_t t) const {
  if (!info || info->segment_len <= 0 || t < 0) return NAN;
  const int64_t seg = t / info->segment_len;
  if (seg == 0) return NAN;
  auto it = visited.find(seg - 1);
  if (it == visited.end()) return NAN;
  const int64_t j = t - seg * info->segment_len;
  const auto& l = it->second->next_loss;
  return j < static_cast<int64_t>(l.size()) ? l[static_cast<size_t>(j)] : NAN;
}

std::vector<int64_t> line_starts_of(const Document& doc) {
  std::vector<int64_t> starts{0};
  const int64_t n = doc.size();
  for (int64_t t = 0; t + 1 < n; ++t) {
    const auto& [b, e] = doc.offsets[static_cast<size_t>(t)];
    if (e - b == 1 && doc.bytes[static_cast<size_t>(b)] == '\n') starts.push_back(t + 1);
  }
  return starts;
}

}  // namespace mnemo::app
