#include "core/trace/provenance_trace.h"

#include "core/models/family.h"
#include "core/trace/keys.h"

#include <algorithm>

namespace mnemo {

// The kind's family reads its provenance (core/models/family.h) when the kind has a chain.
bool has_provenance_chain(const std::string& model_kind) {
  const ProvenanceKind p = capabilities_of(model_kind).provenance;
  return (p == ProvenanceKind::kWriterAttention || p == ProvenanceKind::kAttentionRollout) &&
         family_of(model_kind).provenance;
}

std::vector<std::string> provenance_trace_keys(const std::string& model_kind) {
  return has_provenance_chain(model_kind) ? family_of(model_kind).provenance_keys : std::vector<std::string>{};
}

namespace {
std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

std::optional<ProvenanceStep> writer_provenance_step(const Trace& tr, int64_t segment, int64_t first, int64_t length,
                                                     int64_t lp) {
  if (!tr.has(keys::kWriterAttn)) return std::nullopt;
  const auto& attn = tr.at(keys::kWriterAttn);  // [B, H, k, 1 + Lp + C]
  TORCH_CHECK(attn.dim() == 4, "memformer.writer_attn must be [B, H, k, 1+L+C], got ", attn.sizes());
  const int64_t all = attn.size(3), k = attn.size(2);
  const int64_t n_cls = std::max<int64_t>(0, all - 1 - lp);
  const int64_t n = std::min(length, all - 1);
  auto mean = attn.select(0, 0).to(torch::kFloat32).mean(0);  // [k, all]
  // [self | real tokens | cls]: padded columns hold no weight and are left out.
  std::vector<int64_t> keep{0};
  for (int64_t j = 0; j < n; ++j) keep.push_back(1 + j);
  for (int64_t c = 0; c < n_cls; ++c) keep.push_back(1 + lp + c);
  auto rows = mean.index_select(1, torch::tensor(keep, torch::kInt64));
  std::vector<float> v = to_vector(rows);
  return memformer_provenance_step(segment, first, static_cast<int>(k), static_cast<int>(n),
                                   static_cast<int>(n_cls), v.data());
}

std::optional<ProvenanceStep> rollout_provenance_step(const Trace& tr, int64_t segment, int64_t first, int64_t length,
                                                      int64_t lp) {
  auto names = tr.keys_with_prefix(keys::kRmtAttnPrefix);
  if (names.empty()) return std::nullopt;
  std::vector<std::pair<int, torch::Tensor>> maps;
  for (const auto& key : names) maps.emplace_back(std::stoi(key.substr(std::string(keys::kRmtAttnPrefix).size())), tr.at(key));
  std::sort(maps.begin(), maps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto& a0 = maps.front().second;  // [B, H, T, T], T = 2m + Lp: [read | tokens | write]
  TORCH_CHECK(a0.dim() == 4 && a0.size(2) == a0.size(3), "rmt.attn must be [B, H, T, T], got ", a0.sizes());
  const int64_t t = a0.size(2);
  TORCH_CHECK(t > lp && (t - lp) % 2 == 0, "rmt.attn of ", t, " rows does not fit ", lp, " tokens");
  const int64_t m = (t - lp) / 2, n = std::min(length, lp);
  // Rollout: R = Â_{N-1} ... Â_0 with Â = 0.5 mean_h(A) + 0.5 I (the residual stream).
  auto eye = torch::eye(t, torch::kFloat64);
  torch::Tensor roll = eye;
  for (const auto& [l, a] : maps) {
    TORCH_CHECK(a.sizes() == a0.sizes(), "rmt.attn.", l, " differs in shape from the first layer");
    auto hat = 0.5 * a.select(0, 0).to(torch::kFloat64).mean(0) + 0.5 * eye;
    roll = torch::matmul(hat, roll);
  }
  auto w = roll.narrow(0, m + lp, m);  // the write rows over the layer-0 inputs
  auto carry = w.narrow(1, 0, m) + w.narrow(1, m + lp, m);  // read r and write r both hold M[r]
  auto source = w.narrow(1, m, n);
  auto other = (1.0 - w.sum(1)).clamp_min(0.0);  // what was spent on the cache (trxl-rmt)
  ProvenanceStep p;
  p.segment = segment;
  p.slots = static_cast<int>(m);
  p.first_token = first;
  p.tokens = static_cast<int>(n);
  p.diagonal = false;
  p.carry = to_vector(carry.clamp_min(0.0));
  p.source = to_vector(source.clamp_min(0.0));
  p.other = to_vector(other);
  return p;
}

std::optional<ProvenanceStep> provenance_step_from_trace(const Trace& trace, const std::string& model_kind,
                                                         int64_t segment, int64_t first_token, int64_t length,
                                                         int64_t padded_len) {
  if (!has_provenance_chain(model_kind)) return std::nullopt;
  return family_of(model_kind).provenance(trace, segment, first_token, length, padded_len);
}

}  // namespace mnemo
