#include "app/figures_rmt.h"

#include "core/models/rmt.h"
#include "viz/export.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace mnemo::app {

namespace {

void emit(const viz::Figure& fig, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  if (fm.png) {
    viz::write_png(fig, base + ".png", 2.0f);
    out.push_back(base + ".png");
  }
  if (fm.svg) {
    viz::write_svg(fig, base + ".svg");
    out.push_back(base + ".svg");
  }
}

void emit_heatmap(const viz::HeatmapSpec& spec, const std::string& base, const FigureFormats& fm,
                  std::vector<std::string>& out) {
  emit(viz::make_heatmap(spec), base, fm, out);
  if (fm.csv) {
    viz::write_csv_matrix(base + ".csv", spec.rows, spec.cols, spec.values, spec.row_labels, spec.col_labels);
    out.push_back(base + ".csv");
  }
}

std::vector<int> layers_with(const Snapshot& snap, const std::string& prefix) {
  std::vector<int> out;
  for (const auto& k : snap.trace.keys_with_prefix(prefix)) {
    try {
      out.push_back(std::stoi(k.substr(prefix.size())));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t padded_len(const Snapshot& snap) {
  return snap.trace.has(keys::kInputTokens) ? snap.trace.at(keys::kInputTokens).size(1) : snap.length;
}

// [H, R, C] -> [R, C] (mean over heads or one head), float32 contiguous, rows/cols selected.
torch::Tensor pick(const torch::Tensor& attn_b, int head, const std::vector<int64_t>& rows,
                   const std::vector<int64_t>& cols) {
  TORCH_CHECK(head >= -1 && head < attn_b.size(0), "head ", head, " out of range 0..", attn_b.size(0) - 1);
  auto m = head < 0 ? attn_b.to(torch::kFloat32).mean(0) : attn_b[head].to(torch::kFloat32);
  auto ri = torch::tensor(rows, torch::kInt64), ci = torch::tensor(cols, torch::kInt64);
  return m.index_select(0, ri).index_select(1, ci).contiguous();
}

std::string head_label(int head, int64_t nheads) {
  return head < 0 ? "mean over " + std::to_string(nheads) + " heads" : "head " + std::to_string(head);
}

}  // namespace

std::vector<int> rmt_layers(const Snapshot& snap) { return layers_with(snap, keys::kRmtAttnPrefix); }
std::vector<int> trxl_layers(const Snapshot& snap) { return layers_with(snap, keys::kTrxlAttnPrefix); }

viz::HeatmapSpec rmt_attention_spec(const Snapshot& snap, const Document& doc, int layer, int head) {
  const auto& attn = snap.trace.at(keys::kRmtAttnPrefix + std::to_string(layer));  // [B, H, T, T]
  const int64_t lp = padded_len(snap), t = attn.size(2), m = (t - lp) / 2, n = snap.length;
  TORCH_CHECK(m >= 1 && 2 * m + lp == t, "rmt attention of size ", t, " does not fit a segment of ", lp, " tokens");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < m; ++i) keep.push_back(i);
  for (int64_t j = 0; j < n; ++j) keep.push_back(m + j);
  for (int64_t i = 0; i < m; ++i) keep.push_back(m + lp + i);
  auto sel = pick(attn[0], head, keep, keep);

  viz::HeatmapSpec s;
  s.title = "RMT attention, layer " + std::to_string(layer) + ", segment " + std::to_string(snap.segment) + " (" +
            head_label(head, attn.size(1)) + ")";
  s.x_label = "key: read memory | segment tokens | write memory";
  s.y_label = "query";
  s.colorbar_label = "attention weight";
  s.rows = s.cols = static_cast<int>(keep.size());
  s.values.assign(sel.data_ptr<float>(), sel.data_ptr<float>() + sel.numel());
  std::vector<std::string> labels;
  for (int64_t i = 0; i < m; ++i) labels.push_back("r" + std::to_string(i));
  for (int64_t j = 0; j < n; ++j) labels.push_back(token_text(doc, snap.first_token + j));
  for (int64_t i = 0; i < m; ++i) labels.push_back("w" + std::to_string(i));
  s.row_labels = labels;
  s.col_labels = labels;
  s.vmin = 0.f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n);
  s.col_separators = {mi, mi + ni};
  s.row_separators = {mi, mi + ni};
  s.col_groups = {{0, "read"}, {mi, "tokens"}, {mi + ni, "write"}};
  return s;
}

viz::BarSpec rmt_block_mass_spec(const Snapshot& snap) {
  viz::BarSpec s;
  const std::vector<std::string> names = {"reading", "writing", "rewriting"};
  const std::vector<viz::Rgb> colors = {{44, 123, 182}, {215, 48, 39}, {253, 174, 97}};
  int64_t nheads = 0;
  for (int l : layers_with(snap, keys::kRmtBlockMassPrefix)) {
    auto bm = snap.trace.at(keys::kRmtBlockMassPrefix + std::to_string(l))[0].to(torch::kFloat32);  // [H, 3]
    nheads = bm.size(0);
    auto mean = bm.mean(0);
    for (int k = 0; k < 3; ++k) {
      s.labels.push_back("L" + std::to_string(l) + " " + names[static_cast<size_t>(k)]);
      s.values.push_back(mean[k].item<float>());
      s.colors.push_back(colors[static_cast<size_t>(k)]);
    }
  }
  s.title = "RMT memory operations, segment " + std::to_string(snap.segment) + " (mean over " +
            std::to_string(nheads) + " heads)";
  s.x_label = "reading tok->read | writing write->tok | rewriting write->read";
  s.y_label = "attention mass";
  s.show_values = true;
  return s;
}

viz::HeatmapSpec trxl_attention_spec(const Snapshot& snap, const Document& doc, int layer, int head) {
  const auto& attn = snap.trace.at(keys::kTrxlAttnPrefix + std::to_string(layer));  // [B, H, Lp, P + T]
  const int64_t lp = padded_len(snap), n = snap.length, cols_all = attn.size(3);
  int64_t m = 0;
  const std::string rmt_key = keys::kRmtAttnPrefix + std::to_string(layer);
  if (snap.trace.has(rmt_key)) m = (snap.trace.at(rmt_key).size(2) - lp) / 2;
  const int64_t c = cols_all - 2 * m - lp;
  TORCH_CHECK(c >= 0 && attn.size(2) == lp, "trxl attention [", attn.size(2), ", ", cols_all,
              "] does not fit a segment of ", lp, " tokens");
  std::vector<int64_t> rows, cols;
  for (int64_t j = 0; j < n; ++j) rows.push_back(j);
  for (int64_t k = 0; k < c + m; ++k) cols.push_back(k);
  for (int64_t j = 0; j < n; ++j) cols.push_back(c + m + j);
  for (int64_t i = 0; i < m; ++i) cols.push_back(c + m + lp + i);
  auto sel = pick(attn[0], head, rows, cols);

  viz::HeatmapSpec s;
  s.title = std::string(m > 0 ? "Transformer-XL + RMT" : (c > 0 ? "Transformer-XL" : "Transformer")) +
            " attention, layer " + std::to_string(layer) + ", segment " + std::to_string(snap.segment) + " (" +
            head_label(head, attn.size(1)) + ")";
  s.x_label = c > 0 ? "key: cache (previous tokens' states, no gradient) | segment tokens" : "key: segment tokens";
  if (m > 0) s.x_label += " (with read / write memory)";
  s.y_label = "query token";
  s.colorbar_label = "attention weight";
  s.rows = static_cast<int>(rows.size());
  s.cols = static_cast<int>(cols.size());
  s.values.assign(sel.data_ptr<float>(), sel.data_ptr<float>() + sel.numel());
  for (int64_t j = 0; j < n; ++j) s.row_labels.push_back(token_text(doc, snap.first_token + j));
  for (int64_t k = 0; k < c; ++k) {
    const int64_t tok = snap.first_token - c + k;  // the cache holds the c tokens before the segment
    s.col_labels.push_back(tok >= 0 && tok < doc.size() ? token_text(doc, tok) : "-");
  }
  for (int64_t i = 0; i < m; ++i) s.col_labels.push_back("r" + std::to_string(i));
  for (int64_t j = 0; j < n; ++j) s.col_labels.push_back(token_text(doc, snap.first_token + j));
  for (int64_t i = 0; i < m; ++i) s.col_labels.push_back("w" + std::to_string(i));
  s.vmin = 0.f;
  const int ci = static_cast<int>(c), mi = static_cast<int>(m), ni = static_cast<int>(n);
  if (c > 0) {
    s.col_groups.push_back({0, "cache"});
    s.col_separators.push_back(ci);
  }
  if (m > 0) {
    s.col_groups.push_back({ci, "read"});
    s.col_separators.push_back(ci + mi);
  }
  s.col_groups.push_back({ci + mi, "tokens"});
  if (m > 0) {
    s.col_groups.push_back({ci + mi + ni, "write"});
    s.col_separators.push_back(ci + mi + ni);
  }
  return s;
}

std::vector<std::string> write_rmt_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                           const FigureFormats& fm) {
  std::vector<std::string> out;
  for (int l : rmt_layers(snap)) {
    const int64_t nheads = snap.trace.at(keys::kRmtAttnPrefix + std::to_string(l)).size(1);
    for (int h = -1; h < nheads; ++h) {
      const std::string base = dir + "/rmt_attention_l" + std::to_string(l) + "_" +
                               (h < 0 ? std::string("mean") : "head" + std::to_string(h));
      emit_heatmap(rmt_attention_spec(snap, doc, l, h), base, fm, out);
    }
  }
  const auto mass_layers = layers_with(snap, keys::kRmtBlockMassPrefix);
  if (!mass_layers.empty()) {
    emit(viz::make_bars(rmt_block_mass_spec(snap)), dir + "/rmt_block_mass", fm, out);
    if (fm.csv) {
      std::vector<std::vector<std::string>> rows;
      for (int l : mass_layers) {
        auto bm = snap.trace.at(keys::kRmtBlockMassPrefix + std::to_string(l))[0].to(torch::kFloat32);  // [H, 3]
        for (int64_t h = -1; h < bm.size(0); ++h) {
          auto v = h < 0 ? bm.mean(0) : bm[h];
          rows.push_back({std::to_string(l), h < 0 ? std::string("mean") : std::to_string(h),
                          std::to_string(v[0].item<float>()), std::to_string(v[1].item<float>()),
                          std::to_string(v[2].item<float>())});
        }
      }
      viz::write_csv_table(dir + "/rmt_block_mass.csv", {"layer", "head", "reading", "writing", "rewriting"}, rows);
      out.push_back(dir + "/rmt_block_mass.csv");
    }
  }
  for (int l : trxl_layers(snap)) {
    const int64_t nheads = snap.trace.at(keys::kTrxlAttnPrefix + std::to_string(l)).size(1);
    for (int h = -1; h < nheads; ++h) {
      const std::string base = dir + "/trxl_attention_l" + std::to_string(l) + "_" +
                               (h < 0 ? std::string("mean") : "head" + std::to_string(h));
      emit_heatmap(trxl_attention_spec(snap, doc, l, h), base, fm, out);
    }
  }
  return out;
}

}  // namespace mnemo::app
