// The tensor readers the families' extractors share (app/figures/extract.cpp,
// families/mtn/view/extract.cpp): a trace's tensors to plain arrays, its layered keys, an
// attention map's rows, columns and block masses. LibTorch: only extractors include it, and
// each names what it uses with a using-declaration (so a unity batch sees no new names).
#pragma once
#include "app/figures/figures.h"
#include "app/figures/step_data.h"
#include "core/data/document.h"
#include "core/engine/engine.h"
#include "core/trace/keys.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace mnemo::app::trace_read {

inline std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

inline std::vector<int64_t> to_ivector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

inline std::vector<int> layers_with(const Trace& tr, const std::string& prefix) {
  std::vector<int> out;
  for (const auto& k : tr.keys_with_prefix(prefix)) {
    const std::string rest = k.substr(prefix.size());
    if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    try {
      out.push_back(std::stoi(rest));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string doc_token(const Document& doc, int64_t t) { return t >= 0 && t < doc.size() ? token_text(doc, t) : "-"; }

// Fills values / block_max of `a` from attn [B, H, R, C] of every layer, keeping rows / cols.
inline void fill_maps(AttentionData& a, const Trace& tr, const std::vector<int64_t>& rows, const std::vector<int64_t>& cols) {
  auto ri = torch::tensor(rows, torch::kInt64), ci = torch::tensor(cols, torch::kInt64);
  std::vector<torch::Tensor> all;
  for (int l : a.layers) {
    auto m = tr.at(a.source + std::to_string(l))[0].to(torch::kFloat32).index_select(1, ri).index_select(2, ci);  // [H, R, C]
    all.push_back(torch::cat({m.mean(0, true), m}, 0));
  }
  a.values = to_vector(torch::stack(all, 0));
  const size_t block = static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols);
  for (size_t b = 0; b < a.layers.size() * static_cast<size_t>(a.blocks()); ++b) {
    float hi = 0.f;
    for (size_t i = b * block; i < (b + 1) * block; ++i)
      if (std::isfinite(a.values[i])) hi = std::max(hi, a.values[i]);
    a.block_max.push_back(hi > 0.f ? hi : 1.f);
  }
}

struct MassDef {
  int row_block, col_block;
  const char* name;
  const char* help;
};

// Mean over the rows of a row block of the mass on the columns of a column block, per layer and block.
inline void compute_masses(AttentionData& a, const std::vector<MassDef>& defs) {
  for (const auto& d : defs) {
    a.mass_names.push_back(d.name);
    a.mass_help.push_back(d.help);
  }
  const size_t nb = static_cast<size_t>(a.blocks());
  a.mass.assign(a.layers.size() * nb * defs.size(), NAN);
  for (size_t li = 0; li < a.layers.size(); ++li)
    for (size_t b = 0; b < nb; ++b) {
      const float* m = a.values.data() + (li * nb + b) * static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols);
      for (size_t k = 0; k < defs.size(); ++k) {
        const AttnBlock& rb = a.row_blocks[static_cast<size_t>(defs[k].row_block)];
        const AttnBlock& cb = a.col_blocks[static_cast<size_t>(defs[k].col_block)];
        if (rb.count <= 0) continue;
        double total = 0;
        for (int r = rb.first; r < rb.first + rb.count; ++r)
          for (int c = cb.first; c < cb.first + cb.count; ++c) total += m[static_cast<size_t>(r) * static_cast<size_t>(a.cols) + static_cast<size_t>(c)];
        a.mass[(li * nb + b) * defs.size() + k] = static_cast<float>(total / rb.count);
      }
    }
}

inline int64_t padded_len(const Snapshot& snap) {
  return snap.trace.has(keys::kInputTokens) ? snap.trace.at(keys::kInputTokens).size(1) : snap.length;
}

// The segment's n tokens as rows/columns of an attention map: trace index offset + j, the
// token's label and its document index (the RMT and MTN maps' middle block).
inline void token_rows(const Snapshot& snap, const Document& doc, std::vector<int64_t>& idx, std::vector<std::string>& labels,
                std::vector<int64_t>& tok, int64_t offset) {
  for (int64_t j = 0; j < snap.length; ++j) {
    idx.push_back(offset + j);
    labels.push_back(doc_token(doc, snap.first_token + j));
    tok.push_back(snap.first_token + j);
  }
}

}  // namespace mnemo::app::trace_read
