// The MTN family's extractor (its entry, families/mtn/view/entry.h): a step's joint-layer
// attention map, kept tokens, candidates and QA answer probabilities from its trace
// (LibTorch; compiled into mnemo_app_lib beside app/figures/extract.cpp).
#include "families/mtn/view/entry.h"

#include "app/figures/trace_read.h"
#include "families/mtn/core/keys.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace mnemo::app {

namespace {
using trace_read::compute_masses;
using trace_read::doc_token;
using trace_read::fill_maps;
using trace_read::layers_with;
using trace_read::padded_len;
using trace_read::to_ivector;
using trace_read::to_vector;
using trace_read::token_rows;

// The MTN family's joint layers: [memory m | chunk | write memory w].
AttentionData extract_mtn_attention(const Snapshot& snap, const Document& doc) {
  AttentionData a;
  const Trace& tr = snap.trace;
  const int64_t lp = padded_len(snap), n = snap.length;
  if (!(a.layers = layers_with(tr, keys::kMtnJointAttnPrefix)).empty()) {
    a.source = keys::kMtnJointAttnPrefix;
    const auto& t0 = tr.at(a.source + std::to_string(a.layers[0]));
    const int64_t t = t0.size(2);
    int64_t m = t - lp, w = 0;
    if (tr.has(keys::kMtnBlocks)) {
      auto b = to_ivector(tr.at(keys::kMtnBlocks));
      if (b.size() == 3) {
        m = b[0];
        w = b[2];
      }
    }
    if (m < 0 || m + lp + w != t || t0.size(3) != t) return {};
    const bool mtn = tr.has(keys::kMtnKeptSource);
    a.kind = mtn ? "MTN" : (m > 0 ? "MTN naive memory" : "MTN no memory");
    a.heads = static_cast<int>(t0.size(1));
    std::vector<int64_t> src;
    if (tr.has(keys::kMtnCandidateSource)) src = to_ivector(tr.at(keys::kMtnCandidateSource)[0]);
    std::vector<int64_t> idx, tok;
    std::vector<std::string> labels;
    int n_mem = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t s = i < static_cast<int64_t>(src.size()) ? src[static_cast<size_t>(i)] : -2;
      if (s == -1) continue;  // an empty entry: masked everywhere
      idx.push_back(i);
      labels.push_back(s >= 0 ? doc_token(doc, s) : "<mem" + std::to_string(i) + ">");
      tok.push_back(s >= 0 ? s : -1);
      ++n_mem;
    }
    token_rows(snap, doc, idx, labels, tok, m);
    int n_write = 0;
    for (int64_t i = 0; i < w; ++i) {
      const int64_t s = i < static_cast<int64_t>(src.size()) ? src[static_cast<size_t>(i)] : -2;
      if (s == -1) continue;
      idx.push_back(m + lp + i);
      labels.push_back("w" + std::to_string(i));
      tok.push_back(-1);
      ++n_write;
    }
    a.rows = a.cols = static_cast<int>(idx.size());
    const int ni = static_cast<int>(n);
    a.row_blocks = a.col_blocks = {{0, n_mem, "memory"}, {n_mem, ni, "chunk"}, {n_mem + ni, n_write, "write"}};
    a.row_labels = a.col_labels = labels;
    a.row_token = a.col_token = tok;
    fill_maps(a, tr, idx, idx);
    if (m > 0)
      compute_masses(a, {{1, 0, "reading", "chunk -> memory: how much the chunk reads from memory"},
                         {2, 1, "writing", "write -> chunk: how much the new memory takes from the chunk"},
                         {2, 2, "rewriting", "write -> write block: how much the new memory keeps of the old (in language "
                                             "modelling the write rows read the memory through their own block)"}});
    return a;
  }
  return {};
}

MtnData extract_mtn(const Snapshot& snap, const Document& doc) {
  MtnData d;
  const Trace& tr = snap.trace;
  if (!tr.has(keys::kMtnKeptSource)) return d;
  auto src = to_ivector(tr.at(keys::kMtnKeptSource)[0]);
  std::vector<float> imp(src.size(), 0.f);
  std::vector<int64_t> age(src.size(), -1);
  if (tr.has(keys::kMtnKeptImportance)) imp = to_vector(tr.at(keys::kMtnKeptImportance)[0]);
  if (tr.has(keys::kMtnAge)) age = to_ivector(tr.at(keys::kMtnAge)[0]);
  if (imp.size() != src.size() || age.size() != src.size()) return d;
  d.present = true;
  float lo = INFINITY, hi = -INFINITY;
  int64_t oldest = snap.first_token;
  for (size_t i = 0; i < src.size(); ++i) {
    MtnEntry e;
    e.source = src[i];
    e.importance = imp[i];
    e.age = age[i];
    if (e.source >= 0) {
      ++d.kept;
      d.max_age = std::max(d.max_age, e.age);
      oldest = std::min(oldest, e.source);
      if (std::isfinite(e.importance)) {
        lo = std::min(lo, e.importance);
        hi = std::max(hi, e.importance);
      }
    }
    d.entries.push_back(e);
  }
  if (tr.has(keys::kMtnImportance) && tr.has(keys::kMtnCandidateSource)) {
    auto ci = to_vector(tr.at(keys::kMtnImportance)[0]);
    auto cs = to_ivector(tr.at(keys::kMtnCandidateSource)[0]);
    std::vector<int64_t> kept_index;
    if (tr.has(keys::kMtnKeptIndex)) kept_index = to_ivector(tr.at(keys::kMtnKeptIndex)[0]);
    std::set<int64_t> kept(kept_index.begin(), kept_index.end());
    const int64_t m = static_cast<int64_t>(cs.size()) - padded_len(snap);
    for (size_t c = 0; c < cs.size() && c < ci.size(); ++c) {
      if (cs[c] < 0) continue;
      d.cand_source.push_back(cs[c]);
      d.cand_importance.push_back(ci[c]);
      d.cand_kept.push_back(kept.count(static_cast<int64_t>(c)) ? 1 : 0);
      if (static_cast<int64_t>(c) < m) ++d.n_mem_candidates;
      if (std::isfinite(ci[c])) {
        lo = std::min(lo, ci[c]);
        hi = std::max(hi, ci[c]);
      }
    }
  }
  d.imp_min = hi >= lo ? lo : 0.f;
  d.imp_max = hi >= lo ? hi : 1.f;
  // The document from the oldest kept token (or kDocumentContext tokens before the chunk)
  // to the end of the chunk, at most kMaxDocumentView tokens (as the CLI figure).
  const int64_t end = std::min(doc.size(), snap.first_token + snap.length);
  const int64_t l = std::max<int64_t>(1, padded_len(snap));
  int64_t start = std::max(std::min(oldest, snap.first_token - kDocumentContext), end - kMaxDocumentView);
  start = std::max<int64_t>(0, (start / l) * l);  // from a chunk start
  d.view_first = start;
  d.view_end = std::max(start, end);
  d.entry_of.assign(static_cast<size_t>(d.view_end - d.view_first), -1);
  for (size_t i = 0; i < d.entries.size(); ++i) {
    const int64_t s = d.entries[i].source;
    if (s >= d.view_first && s < d.view_end) d.entry_of[static_cast<size_t>(s - d.view_first)] = static_cast<int>(i);
  }
  return d;
}

}  // namespace

void extract_mtn_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string&) {
  const Trace& tr = snap.trace;
  if (d.attention.empty()) d.attention = extract_mtn_attention(snap, doc);
  d.mtn = extract_mtn(snap, doc);
  if (tr.has(keys::kQaAnswerProb)) {
    std::vector<float>& p = d.mtn.qa_answer_prob;
    p = to_vector(tr.at(keys::kQaAnswerProb)[0]);
    p.resize(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(snap.length, static_cast<int64_t>(p.size())))));
  }
}

}  // namespace mnemo::app
