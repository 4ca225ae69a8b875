#include "app/figures/memory_reads.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace mnemo::app {

namespace {

// The `top` largest of `w` (finite, descending; ties: lower index first).
std::vector<int> largest(const std::vector<float>& w, int top) {
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(w.size()); ++i)
    if (std::isfinite(w[static_cast<size_t>(i)])) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return w[static_cast<size_t>(a)] > w[static_cast<size_t>(b)]; });
  if (static_cast<int>(idx.size()) > top) idx.resize(static_cast<size_t>(std::max(0, top)));
  return idx;
}

// Entry `entry`'s holdings from a provenance list: `top` [entries x k] largest sources,
// `initial` [entries] the initial memory's share (a SegmentRecord's or a ProvenanceState's).
bool holdings_from(const std::vector<ProvenanceSource>& top, int k, const std::vector<float>& initial, int entry,
                   MemoryRead& r) {
  const size_t kk = static_cast<size_t>(k);
  if (entry < 0 || (static_cast<size_t>(entry) + 1) * kk > top.size()) return false;
  for (size_t i = 0; i < kk; ++i) {
    const ProvenanceSource& s = top[static_cast<size_t>(entry) * kk + i];
    if (s.token >= 0 && s.weight > 0.f) r.holds.push_back(s);
  }
  if (static_cast<size_t>(entry) < initial.size()) r.initial_share = initial[static_cast<size_t>(entry)];
  return true;
}

// What slot / memory token `entry` held before step `segment`: its provenance after the
// previous step — the visited record, else (a jump computed that step without showing it) the
// chain's state `before`. Returns false, with *why, when neither has it.
bool held_before(const VisitedSegments& visited, const ProvenanceState* before, int64_t segment, int entry,
                 MemoryRead& r, std::string* why) {
  if (segment == 0) {  // the first segment reads the initial memory: no text
    r.initial_share = 1.f;
    return true;
  }
  auto it = visited.find(segment - 1);
  const bool recorded = it != visited.end() && it->second && it->second->prov_top_k > 0;
  if (recorded) return holdings_from(it->second->prov_top, it->second->prov_top_k, it->second->prov_initial, entry, r);
  if (before && before->segment == segment - 1 && before->top_k > 0)
    return holdings_from(before->top, before->top_k, before->initial, entry, r);
  if (it == visited.end() || !it->second)
    *why = "Step segment " + std::to_string(segment - 1) + " (the one before) to see what the entries held.";
  else
    *why = "This model keeps no provenance of its memory (docs/models.md#provenance), so what the entries held is not known.";
  return false;
}

bool is_memory_block(const std::string& name) {
  return name == "read" || name == "previous write" || name == "cache" || name == "memory";
}

}  // namespace

MemoryReads memory_reads(const StepData& st, const VisitedSegments& visited, int64_t token, int top,
                         const ProvenanceState* before) {
  MemoryReads out;
  out.token = token;
  const MemformerData& mf = st.memformer;  // Memformer's reads (empty for the other families)
  const int64_t j = token - st.first_token;
  // A token this step predicts: Memformer's next segment, (segment + 1) * L + p.
  const int64_t p = token - (st.segment + 1) * st.segment_len;
  const bool predicted = st.segment_len > 0 && p >= 0 && p < mf.decoder_rows();
  if (st.segment < 0 || ((j < 0 || j >= st.length) && !predicted)) return out;
  std::vector<float> w;  // the row over memory entries
  std::vector<int64_t> entry_token;
  if (predicted) {
    w.assign(mf.decoder_read.begin() + p * mf.slots, mf.decoder_read.begin() + (p + 1) * mf.slots);
    entry_token.assign(w.size(), -1);
    out.entry_name = "slot";
    out.own_read = true;
    out.predicted = true;
    out.layer = mf.read_layer;
    out.how = "the decoder's last-layer cross-attention over the encoder states, times their memory read in layer " +
              std::to_string(mf.read_layer) + ", each mean over heads (sums to 1 over the slots)";
  } else if (!mf.read.empty() && mf.slots > 0) {
    if (static_cast<size_t>((j + 1) * mf.slots) > mf.read.size()) return out;
    w.assign(mf.read.begin() + j * mf.slots, mf.read.begin() + (j + 1) * mf.slots);
    entry_token.assign(w.size(), -1);
    out.entry_name = "slot";
    out.own_read = true;
    out.layer = mf.read_layer;
    out.how = "the encoder's memory read in layer " + std::to_string(mf.read_layer) +
              ", mean over heads (sums to 1 over the slots)";
  } else {
    const AttentionData& a = st.attention;
    if (a.empty()) return out;
    int row = -1;
    for (int r = 0; r < a.rows; ++r)
      if (a.row_token[static_cast<size_t>(r)] == token) {
        row = r;
        break;
      }
    const AttnBlock* mem = nullptr;
    for (const auto& b : a.col_blocks)
      if (is_memory_block(b.name) && b.count > 0) {
        mem = &b;
        break;
      }
    if (row < 0 || !mem) return out;
    const int li = static_cast<int>(a.layers.size()) - 1;
    const float* m = a.map(li, -1);
    if (!m) return out;
    for (int c = mem->first; c < mem->first + mem->count; ++c) {
      w.push_back(m[static_cast<size_t>(row) * static_cast<size_t>(a.cols) + static_cast<size_t>(c)]);
      entry_token.push_back(a.col_token[static_cast<size_t>(c)]);
    }
    out.layer = a.layers.back();
    out.entry_name = mem->name == "cache" ? "cache token" : mem->name == "memory" ? "kept token" : "memory token";
    out.how = "its attention on the " + mem->name + " block in layer " + std::to_string(out.layer) + " of " + a.kind +
              ", mean over heads (a share of the whole row)";
  }
  if (out.own_read && out.layer >= 0 && out.layer < static_cast<int>(mf.read_gate.size())) {
    out.gate = mf.read_gate[static_cast<size_t>(out.layer)];
    char g[96];
    std::snprintf(g, sizeof g, "; that read enters the encoder at gate tanh(g) = %.4g (model.memory_gate)", out.gate);
    out.how += g;
  }
  out.entries_total = static_cast<int>(w.size());
  for (float x : w)
    if (std::isfinite(x)) out.memory_share += x;
  out.holds_known = true;
  const bool token_entries = out.entry_name == "cache token" || out.entry_name == "kept token";
  for (int e : largest(w, top)) {
    MemoryRead r;
    r.entry = e;
    r.weight = w[static_cast<size_t>(e)];
    r.token = entry_token[static_cast<size_t>(e)];
    if (token_entries) {
      if (r.token >= 0) {
        r.holds.push_back({r.token, 1.f});  // the entry is that token's state
        r.initial_share = 0.f;
      }
    } else if (!held_before(visited, before, st.segment, e, r, &out.holds_note)) {
      out.holds_known = false;
    }
    out.top.push_back(std::move(r));
  }
  return out;
}

}  // namespace mnemo::app
