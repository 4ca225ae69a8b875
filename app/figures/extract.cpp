#include "app/figures/extract.h"

#include "app/figures/family_extract.h"
#include "app/figures/figures.h"
#include "app/figures/families.h"
#include "app/figures/trace_read.h"
#include "core/models/family.h"
#include "core/trace/keys.h"
#include "core/trace/analysis.h"
#include "core/trace/hash_stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>

namespace mnemo::app {

namespace {
using trace_read::compute_masses;
using trace_read::doc_token;
using trace_read::fill_maps;
using trace_read::layers_with;
using trace_read::MassDef;
using trace_read::padded_len;
using trace_read::to_ivector;
using trace_read::to_vector;
using trace_read::token_rows;

// Transformer-XL (and the decoder-only baseline, and the cache attention of Transformer-XL
// + RMT): the segment's token rows over [cache c | read m | tokens n | write m] columns.
AttentionData extract_trxl_attention(const Snapshot& snap, const Document& doc) {
  AttentionData a;
  const Trace& tr = snap.trace;
  const int64_t lp = padded_len(snap), n = snap.length, first = snap.first_token;
  if ((a.layers = layers_with(tr, keys::kTrxlAttnPrefix)).empty()) return {};
  a.source = keys::kTrxlAttnPrefix;
  const auto& t0 = tr.at(keys::layer_key(keys::kTrxlAttnPrefix, a.layers[0]));
  int64_t m = 0;  // RMT memory tokens beside the cache (Transformer-XL + RMT)
  const std::string rmt0 = keys::layer_key(keys::kRmtAttnPrefix, a.layers[0]);
  if (tr.has(rmt0)) m = (tr.at(rmt0).size(2) - lp) / 2;
  const int64_t c = t0.size(3) - lp - 2 * m;
  if (c < 0 || m < 0 || t0.size(2) != lp) return {};
  a.kind = m > 0 ? "Transformer-XL + RMT (cache)" : (c > 0 ? "Transformer-XL" : "Transformer");
  a.heads = static_cast<int>(t0.size(1));
  std::vector<int64_t> rows, cols;
  for (int64_t j = 0; j < n; ++j) {
    rows.push_back(j);
    a.row_labels.push_back(doc_token(doc, first + j));
    a.row_token.push_back(first + j);
  }
  auto col = [&](int64_t index, const std::string& label, int64_t token) {
    cols.push_back(index);
    a.col_labels.push_back(label);
    a.col_token.push_back(token);
  };
  for (int64_t k = 0; k < c; ++k) {
    const int64_t tok = first - c + k;  // the cache holds the c tokens before the segment
    col(k, doc_token(doc, tok), tok >= 0 ? tok : -1);
  }
  for (int64_t i = 0; i < m; ++i) col(c + i, "r" + std::to_string(i), -1);
  for (int64_t j = 0; j < n; ++j) col(c + m + j, doc_token(doc, first + j), first + j);
  for (int64_t i = 0; i < m; ++i) col(c + m + lp + i, "w" + std::to_string(i), -1);
  a.rows = static_cast<int>(rows.size());
  a.cols = static_cast<int>(cols.size());
  a.row_blocks = {{0, a.rows, "tokens"}};
  const int ci = static_cast<int>(c), mi = static_cast<int>(m), ni = static_cast<int>(n);
  if (c > 0) a.col_blocks.push_back({0, ci, "cache"});
  if (m > 0) a.col_blocks.push_back({ci, mi, "read"});
  a.col_blocks.push_back({ci + mi, ni, "tokens"});
  if (m > 0) a.col_blocks.push_back({ci + mi + ni, mi, "write"});
  fill_maps(a, tr, rows, cols);
  if (c > 0)
    compute_masses(a, {{0, 0, "cache", "tokens -> cache: how much the segment reads from the previous tokens' states"},
                       {0, m > 0 ? 2 : 1, "tokens", "tokens -> tokens: attention within the segment"}});
  return a;
}

// RMT (and Transformer-XL + RMT): rows = cols = [read m | tokens n | write m] of rmt.attn.*.
AttentionData extract_rmt_attention(const Snapshot& snap, const Document& doc, const std::string& model_kind) {
  AttentionData a;
  const Trace& tr = snap.trace;
  const int64_t lp = padded_len(snap), n = snap.length;
  if (!(a.layers = layers_with(tr, keys::kRmtAttnPrefix)).empty()) {
    // T = 2m + Lp.
    a.source = keys::kRmtAttnPrefix;
    const auto& t0 = tr.at(a.source + std::to_string(a.layers[0]));
    const int64_t t = t0.size(2), m = (t - lp) / 2;
    if (m < 1 || 2 * m + lp != t || t0.size(3) != t) return {};
    const bool write_only = is_known_model(model_kind) && capabilities_of(model_kind).rmt_previous_write;
    a.kind = attention_map_title(model_kind);
    a.heads = static_cast<int>(t0.size(1));
    std::vector<int64_t> idx;
    std::vector<std::string> labels;
    std::vector<int64_t> tok;
    const std::string rp = write_only ? "pw" : "r";
    for (int64_t i = 0; i < m; ++i) {
      idx.push_back(i);
      labels.push_back(rp + std::to_string(i));
      tok.push_back(-1);
    }
    token_rows(snap, doc, idx, labels, tok, m);
    for (int64_t i = 0; i < m; ++i) {
      idx.push_back(m + lp + i);
      labels.push_back("w" + std::to_string(i));
      tok.push_back(-1);
    }
    a.rows = a.cols = static_cast<int>(idx.size());
    const int mi = static_cast<int>(m), ni = static_cast<int>(n);
    a.row_blocks = a.col_blocks = {{0, mi, write_only ? "previous write" : "read"}, {mi, ni, "tokens"}, {mi + ni, mi, "write"}};
    a.row_labels = a.col_labels = labels;
    a.row_token = a.col_token = tok;
    fill_maps(a, tr, idx, idx);
    auto mass_layers = layers_with(tr, keys::kRmtBlockMassPrefix);
    if (mass_layers == a.layers) {
      a.traced_mass = true;
      a.mass_names = {"reading", "writing", "rewriting"};
      a.mass_help = {"tokens -> read block: how much the segment's tokens read from memory",
                     "write -> tokens: how much the new memory takes from the segment",
                     "write -> read block: how much the new memory keeps of the old"};
      for (int l : a.layers) {
        auto bm = tr.at(keys::kRmtBlockMassPrefix + std::to_string(l))[0].to(torch::kFloat32);  // [H, 3]
        auto all = torch::cat({bm.mean(0, true), bm}, 0);
        auto v = to_vector(all);
        a.mass.insert(a.mass.end(), v.begin(), v.end());
      }
    } else {
      compute_masses(a, {{1, 0, "reading", "tokens -> read block"}, {2, 1, "writing", "write -> tokens"},
                         {2, 0, "rewriting", "write -> read block"}});
    }
    return a;
  }
  return {};
}

// One projection's arrays from its counts [K, 2^tau] (and p [N, K] when defined).
bool fill_hash_path(HashPathData& d, const std::string& path, const torch::Tensor& counts, const torch::Tensor& p) {
  d.path = path;
  std::tie(d.group, d.projection) = split_hash_path(path);
  if (counts.dim() != 2 || counts.size(0) < 1 || counts.size(1) < 1) return false;
  d.tables = static_cast<int>(counts.size(0));
  d.buckets = static_cast<int>(counts.size(1));
  d.counts = to_vector(counts);
  d.load.resize(d.counts.size());
  const HashStats st = hash_stats(counts);
  for (int k = 0; k < d.tables; ++k) {
    const HashTableStats& t = st.tables[static_cast<size_t>(k)];
    d.entropy.push_back(t.entropy);
    d.dead_fraction.push_back(t.dead_fraction);
    d.max_load.push_back(t.max_load);
    d.lookups.push_back(t.lookups);
    const double mean = static_cast<double>(t.lookups) / d.buckets;
    for (int b = 0; b < d.buckets; ++b) {
      const size_t i = static_cast<size_t>(k) * static_cast<size_t>(d.buckets) + static_cast<size_t>(b);
      d.load[i] = mean > 0 ? static_cast<float>(d.counts[i] / mean) : 0.f;
    }
  }
  const HashTableStats mean = st.mean();
  d.mean_entropy = mean.entropy;
  d.mean_dead = mean.dead_fraction;
  d.mean_max_load = mean.max_load;
  if (p.defined()) {
    d.p = to_vector(p.flatten());
    d.p_hist.assign(HashPathData::kPBins, 0.f);
    double sum = 0;
    for (float v : d.p) {
      if (!std::isfinite(v)) continue;
      const int b = std::min(HashPathData::kPBins - 1, std::max(0, static_cast<int>(v * HashPathData::kPBins)));
      d.p_hist[static_cast<size_t>(b)] += 1.f;
      sum += v;
      ++d.p_count;
    }
    d.p_mean = d.p_count > 0 ? sum / static_cast<double>(d.p_count) : 0.0;
  }
  return true;
}

void add_hash_path(HashData& h, HashPathData d) {
  if (std::find(h.groups.begin(), h.groups.end(), d.group) == h.groups.end()) h.groups.push_back(d.group);
  h.paths.push_back(std::move(d));
}

}  // namespace

void extract_decoder_lm_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model_kind) {
  const Trace& tr = snap.trace;
  if (!layers_with(tr, keys::kRmtAttnPrefix).empty()) {
    d.attention = extract_rmt_attention(snap, doc, model_kind);
  } else if (!layers_with(tr, keys::kTrxlAttnPrefix).empty()) {
    d.attention = extract_trxl_attention(snap, doc);
  }
  if (d.attention.source == keys::kRmtAttnPrefix) {
    AttentionData cache = extract_trxl_attention(snap, doc);  // Transformer-XL + RMT's cache map beside it
    if (!cache.empty()) d.extra_attention.push_back(std::move(cache));
  }
}

StepData make_step_data(const Snapshot& snap, const Document& doc, const std::string& model_kind) {
  StepData d;
  torch::NoGradGuard no_grad;
  d.segment = snap.segment;
  d.num_segments = snap.num_segments;
  d.first_token = snap.first_token;
  d.length = snap.length;
  d.segment_len = padded_len(snap);
  d.loss = snap.loss;
  d.non_finite = snap.non_finite;
  d.non_finite_key = snap.non_finite_key;
  const Trace& tr = snap.trace;

  // Each family's arrays (app/figures/families.h), as the trace's keys decide: every family's
  // extractor reads only its own keys, so a model's trace fills its own family's part, and the
  // gallery's synthetic traces (app/gui/model/synthetic.cpp, every family's keys in one step,
  // labelled memformer) fill them all, as a kind this build does not know is told by its keys.
  for (const ViewFamily& f : view_families()) f.extract(d, snap, doc, model_kind);
  d.hash = hash_data_of(tr);
  // lm.loss value j predicts the document token LossTarget says (docs/formats.md); tokens
  // past the document's end are padding, never predicted.
  // A recording whose manifest names no model (a hand-written session) is told by its keys.
  const LossTarget target = loss_target_of(!model_kind.empty() ? model_kind : tr.has(keys::kWriterAttn) ? "memformer" : "");
  d.loss_next_segment = target == LossTarget::kNextSegment;
  auto token_losses_of = [&](const char* key, TokenLosses& out) {
    if (!tr.has(key)) return;
    auto l = tr.at(key)[0];
    const int64_t len = l.size(0);
    const int64_t first = predicted_token(target, snap.segment, len, 0);
    const int64_t n = std::max<int64_t>(0, std::min<int64_t>(len, doc.size() - first));
    if (n > 0) {
      out.first = first;
      out.values = to_vector(l.slice(0, 0, n));
    }
  };
  token_losses_of(keys::kLmLoss, d.token_losses);
  token_losses_of(keys::kLmLossMemoryReset, d.token_losses_reset);
  token_losses_of(keys::kLmLossMemoryZeroed, d.token_losses_zeroed);
  return d;
}

HashData hash_data_of(const Trace& tr) {
  torch::NoGradGuard no_grad;
  HashData h;
  for (const auto& path : hash_paths(tr)) {
    HashPathData d;
    const torch::Tensor p = tr.has(keys::hash_p_key(path)) ? tr.at(keys::hash_p_key(path)) : torch::Tensor();
    if (fill_hash_path(d, path, tr.at(keys::hash_counts_key(path)), p)) add_hash_path(h, std::move(d));
  }
  return h;
}

HashData hash_data_of(const HashStatsAccumulator& acc) {
  torch::NoGradGuard no_grad;
  HashData h;
  for (const auto& path : acc.paths()) {
    HashPathData d;
    if (fill_hash_path(d, path, acc.counts(path), torch::Tensor())) add_hash_path(h, std::move(d));
  }
  return h;
}

SlotEffects slot_effects_data(const SegmentEntryEffects& fx, const MemoryEntries& entries) {
  SlotEffects out;
  out.segment = fx.segment;
  out.entry_kind = entries.groups.size() == 1 ? entries.groups[0].name : "entry";
  for (int64_t e = 0; e < entries.count(); ++e) out.labels.push_back(entries.label(e));
  out.tokens = fx.tokens;
  out.carried = fx.carried;
  out.entries_removed = fx.segment > 0;
  for (const auto& a : fx.ablations) {
    out.ablations.push_back(ablation_name(a.ablation));
    out.removed.push_back(a.removed);
    out.all_removed.push_back(a.all_removed);
  }
  return out;
}

}  // namespace mnemo::app
