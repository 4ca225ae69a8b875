#include "app/figures_mtn.h"

#include "core/models/mtn.h"
#include "viz/export.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace mnemo::app {

namespace {

constexpr viz::Rgb kInk{25, 25, 25};
constexpr viz::Rgb kMuted{95, 95, 95};
constexpr viz::Rgb kBand{228, 228, 228};
constexpr viz::Rgb kOutline{0, 0, 0};

// Chunk length the model was given (padded), and the real tokens of the chunk.
int64_t padded_len(const Snapshot& snap) {
  return snap.trace.has(keys::kInputTokens) ? snap.trace.at(keys::kInputTokens).size(1) : snap.length;
}

std::string token_of(const Document& doc, int64_t t) {
  if (t < 0 || t >= doc.size()) return "#" + std::to_string(t);
  return token_text(doc, t);
}

std::vector<int64_t> to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU, torch::kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

std::vector<float> to_fvec(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// Age colour: viridis over 0..max_age; `pale` blends it with white so dark text stays legible.
viz::Rgb age_color(int64_t age, int64_t max_age, bool pale) {
  const float t = max_age > 0 ? static_cast<float>(age) / static_cast<float>(max_age) : 0.f;
  viz::Rgb c = viz::sample(viz::Colormap::Viridis, t);
  if (!pale) return c;
  auto mix = [](uint8_t v) { return static_cast<uint8_t>(0.45f * v + 0.55f * 255.f); };
  return viz::Rgb{mix(c.r), mix(c.g), mix(c.b)};
}

void put_text(viz::Figure& f, float x, float y, const std::string& s, float size, viz::Rgb color, bool bold = false,
              viz::Anchor anchor = viz::Anchor::Start) {
  viz::Text t;
  t.x = x;
  t.y = y;
  t.text = s;
  t.size = size;
  t.color = color;
  t.bold = bold;
  t.anchor = anchor;
  f.prims.emplace_back(std::move(t));
}

void put_rect(viz::Figure& f, float x, float y, float w, float h, std::optional<viz::Rgb> fill,
              std::optional<viz::Rgb> stroke = std::nullopt, float stroke_width = 1.f) {
  viz::Rect r;
  r.x = x;
  r.y = y;
  r.w = w;
  r.h = h;
  r.fill = fill;
  r.stroke = stroke;
  r.stroke_width = stroke_width;
  f.prims.emplace_back(r);
}

// Age legend (swatches for the distinct ages, at most 16 shown) with its top-left corner at
// (x, y). Returns {width, height}.
std::pair<float, float> age_legend(viz::Figure& f, float x, float y, const std::vector<int64_t>& ages, int64_t max_age,
                                   bool pale) {
  std::set<int64_t> distinct(ages.begin(), ages.end());
  distinct.erase(-1);
  std::vector<int64_t> show(distinct.begin(), distinct.end());
  if (show.size() > 16) {
    std::vector<int64_t> thin;
    for (size_t i = 0; i < 16; ++i) thin.push_back(show[i * (show.size() - 1) / 15]);
    show = thin;
  }
  put_text(f, x, y + 12, "age", 12, kInk, true);
  put_text(f, x, y + 27, "chunks survived", 11, kMuted);
  float yy = y + 36, w = viz::text_width("chunks survived", 11);
  for (int64_t a : show) {
    put_rect(f, x, yy, 14, 14, age_color(a, max_age, pale), kMuted, 0.5f);
    put_text(f, x + 20, yy + 11, std::to_string(a), 11, kInk);
    yy += 18;
  }
  return {w, yy - y};
}

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

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

bool is_mtn_snapshot(const Snapshot& snap) {
  return snap.trace.has(keys::kMtnKeptSource) || !snap.trace.keys_with_prefix(keys::kMtnJointAttnPrefix).empty();
}

std::string mtn_token_context(const Document& doc, int64_t t, int context) {
  if (t < 0 || t >= doc.size()) return "#" + std::to_string(t);
  std::string s = "t" + std::to_string(t) + "  ";
  for (int64_t u = std::max<int64_t>(0, t - context); u < t; ++u) s += token_text(doc, u);
  s += "[" + token_text(doc, t) + "]";
  for (int64_t u = t + 1; u < std::min<int64_t>(doc.size(), t + 1 + context); ++u) s += token_text(doc, u);
  return s;
}

viz::Figure mtn_memory_figure(const Snapshot& snap, const Document& doc) {
  auto src = to_vec(snap.trace.at(keys::kMtnKeptSource)[0]);
  auto imp = to_fvec(snap.trace.at(keys::kMtnKeptImportance)[0]);
  auto age = to_vec(snap.trace.at(keys::kMtnAge)[0]);
  const int64_t m = static_cast<int64_t>(src.size());
  int64_t max_age = 0, kept = 0;
  viz::BarSpec s;
  for (int64_t i = 0; i < m; ++i) {
    if (src[i] < 0) continue;
    ++kept;
    max_age = std::max(max_age, age[i]);
  }
  for (int64_t i = 0; i < m; ++i) {
    if (src[i] < 0) continue;
    s.labels.push_back(mtn_token_context(doc, src[i]));
    s.values.push_back(imp[i]);
    s.colors.push_back(age_color(age[i], max_age, false));
  }
  s.title = "MTN memory after chunk " + std::to_string(snap.segment) + ": " + std::to_string(kept) + " of " +
            std::to_string(m) + " entries";
  s.x_label = "kept token [in context]";
  s.y_label = "importance V_I\u00b7e + b_I";
  s.horizontal = true;
  if (s.values.empty()) {  // nothing kept yet: one empty placeholder bar
    s.labels = {"(memory empty)"};
    s.values = {0.f};
    s.colors = {kMuted};
  }
  viz::Figure f = viz::make_bars(s);
  const float x = f.width + 4;
  auto [lw, lh] = age_legend(f, x, 44, age, max_age, false);
  f.width = x + lw + 14;
  f.height = std::max(f.height, 44 + lh + 14);
  return f;
}

viz::HeatmapSpec mtn_importance_spec(const Snapshot& snap, const Document& doc) {
  auto imp = to_fvec(snap.trace.at(keys::kMtnImportance)[0]);
  auto cand = to_vec(snap.trace.at(keys::kMtnCandidateSource)[0]);
  const int64_t n = static_cast<int64_t>(imp.size()), l = padded_len(snap), m = n - l;
  viz::HeatmapSpec s;
  int64_t n_mem = 0;
  for (int64_t c = 0; c < n; ++c) {
    if (cand[c] < 0) continue;
    if (c < m) ++n_mem;
    s.values.push_back(imp[c]);
    s.col_labels.push_back(token_of(doc, cand[c]));
  }
  s.title = "MTN importance of keep_m_max's candidates, chunk " + std::to_string(snap.segment);
  s.x_label = "previous memory | chunk tokens   (outlined: kept for the next chunk)";
  s.y_label = "";
  s.colorbar_label = "importance";
  s.rows = 1;
  s.cols = static_cast<int>(s.values.size());
  s.row_labels = {"importance"};
  s.cmap = viz::Colormap::Diverging;
  s.cell = 18;
  if (n_mem > 0) {
    s.col_groups.push_back({0, "memory"});
    s.col_separators.push_back(static_cast<int>(n_mem));
  }
  s.col_groups.push_back({static_cast<int>(n_mem), "chunk " + std::to_string(snap.segment)});
  return s;
}

viz::Figure mtn_importance_figure(const Snapshot& snap, const Document& doc) {
  auto spec = mtn_importance_spec(snap, doc);
  viz::Figure f = viz::make_heatmap(spec);
  // Outline the kept candidates (cells are the figure's cell rects in row-major order).
  auto cand = to_vec(snap.trace.at(keys::kMtnCandidateSource)[0]);
  auto kept = to_vec(snap.trace.at(keys::kMtnKeptIndex)[0]);
  std::vector<int> col_of(cand.size(), -1);
  int col = 0;
  for (size_t c = 0; c < cand.size(); ++c)
    if (cand[c] >= 0) col_of[c] = col++;
  std::vector<const viz::Rect*> cells;
  for (const auto& p : f.prims)
    if (const auto* r = std::get_if<viz::Rect>(&p); r && r->cell) cells.push_back(r);
  std::vector<viz::Rect> outlines;
  for (int64_t k : kept) {
    if (k < 0 || k >= static_cast<int64_t>(col_of.size()) || col_of[k] < 0) continue;
    const viz::Rect& c = *cells.at(static_cast<size_t>(col_of[k]));
    viz::Rect o;
    o.x = c.x + 1;
    o.y = c.y + 1;
    o.w = c.w - 2;
    o.h = c.h - 2;
    o.fill = std::nullopt;
    o.stroke = kOutline;
    o.stroke_width = 2.f;
    outlines.push_back(o);
  }
  for (const auto& o : outlines) f.prims.emplace_back(o);
  return f;
}

viz::Figure mtn_document_figure(const Snapshot& snap, const Document& doc) {
  auto src = to_vec(snap.trace.at(keys::kMtnKeptSource)[0]);
  auto age = to_vec(snap.trace.at(keys::kMtnAge)[0]);
  const int64_t l = std::max<int64_t>(1, padded_len(snap));
  const int64_t first = snap.first_token, end = std::min(doc.size(), snap.first_token + snap.length);
  std::map<int64_t, int64_t> age_of;
  int64_t max_age = 0, oldest = first;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0) continue;
    age_of[src[i]] = age[i];
    max_age = std::max(max_age, age[i]);
    oldest = std::min(oldest, src[i]);
  }
  // Show the oldest kept token and at least kDocumentContext tokens before the chunk.
  int64_t start = std::max(std::min(oldest, first - kDocumentContext), end - kMaxDocumentView);
  start = std::max<int64_t>(0, (start / l) * l);
  int64_t hidden = 0;
  for (const auto& [t, a] : age_of) hidden += t < start ? 1 : 0;

  // Display text of each token: spaces stay spaces, a newline is drawn as ↵ and breaks the line.
  auto shown = [&](int64_t t) -> std::string {
    const auto& [b, e] = doc.offsets[static_cast<size_t>(t)];
    std::string_view bytes(doc.bytes.data() + b, static_cast<size_t>(e - b));
    if (bytes == " ") return " ";
    return viz::token_label(bytes);
  };
  auto is_newline = [&](int64_t t) {
    const auto& [b, e] = doc.offsets[static_cast<size_t>(t)];
    return e - b == 1 && doc.bytes[static_cast<size_t>(b)] == '\n';
  };
  const float size = 13, line_h = 21, max_w = 860, pad = 14;
  auto width_of = [&](const std::vector<int64_t>& line, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += shown(line[i]);
    return viz::text_width(s, size);
  };
  std::vector<std::vector<int64_t>> lines(1);
  for (int64_t t = start; t < end; ++t) {
    auto& line = lines.back();
    line.push_back(t);
    if (is_newline(t)) {
      lines.emplace_back();
      continue;
    }
    if (line.size() > 1 && width_of(line, line.size()) > max_w) {
      // Break after the last space of the line when there is one, else before this token.
      size_t cut = line.size() - 1;
      for (size_t i = line.size() - 1; i-- > 0;)
        if (shown(line[i]) == " ") {
          cut = i + 1;
          break;
        }
      std::vector<int64_t> rest(line.begin() + static_cast<std::ptrdiff_t>(cut), line.end());
      line.resize(cut);
      lines.push_back(rest);
    }
  }
  if (lines.back().empty()) lines.pop_back();

  viz::Figure f;
  const std::string title = "MTN memory in the document after chunk " + std::to_string(snap.segment);
  char sub[256];
  std::snprintf(sub, sizeof sub, "%zu of %zu entries kept; highlight colour = age (chunks survived); grey band = chunk %lld; | = chunk start",
                age_of.size(), src.size(), static_cast<long long>(snap.segment));
  std::string subtitle = sub;
  if (hidden > 0) subtitle += "; " + std::to_string(hidden) + " kept tokens lie before the text shown";
  put_text(f, pad, pad + 15, title, 15, kInk, true);
  put_text(f, pad, pad + 34, subtitle, 11, kMuted);
  float y = pad + 48;
  for (const auto& line : lines) {
    std::vector<float> xs(line.size() + 1);
    xs[0] = pad;
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      text += shown(line[i]);
      xs[i + 1] = pad + viz::text_width(text, size);
    }
    // Chunk band (runs), kept highlights, chunk-start marks, then the text on top.
    for (size_t i = 0; i < line.size();) {
      if (line[i] < first) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && line[j] >= first) ++j;
      put_rect(f, xs[i], y, xs[j] - xs[i], line_h, kBand);
      i = j;
    }
    for (size_t i = 0; i < line.size(); ++i) {
      auto it = age_of.find(line[i]);
      if (it == age_of.end()) continue;
      put_rect(f, xs[i], y + 2, std::max(xs[i + 1] - xs[i], 4.f), line_h - 4, age_color(it->second, max_age, true),
               kMuted, 0.5f);
    }
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] % l != 0) continue;
      viz::Line mk;
      mk.x0 = mk.x1 = xs[i];
      mk.y0 = y + 1;
      mk.y1 = y + line_h - 1;
      mk.color = kMuted;
      mk.width = 1.f;
      f.prims.emplace_back(mk);
    }
    put_text(f, pad, y + 15, text, size, kInk);
    y += line_h;
  }
  float width = std::max(max_w + 40, viz::text_width(subtitle, 11) + 2 * pad);
  const float lx = width + 8;
  auto [lw, lh] = age_legend(f, lx, pad + 48, age, max_age, true);
  f.width = std::ceil(lx + lw + pad);
  f.height = std::ceil(std::max(y, pad + 48 + lh) + pad);
  return f;
}

viz::HeatmapSpec mtn_attention_spec(const Snapshot& snap, const Document& doc, int layer) {
  auto names = snap.trace.keys_with_prefix(keys::kMtnJointAttnPrefix);
  TORCH_CHECK(!names.empty(), "no mtn.joint_attn.* in the trace");
  const std::string prefix = keys::kMtnJointAttnPrefix;
  int last = -1;
  for (const auto& k : names) last = std::max(last, std::stoi(k.substr(prefix.size())));
  if (layer < 0) layer = last;
  const std::string key = prefix + std::to_string(layer);
  auto a = snap.trace.at(key)[0];  // [H, T, T]
  const int64_t heads = a.size(0), t = a.size(1), l = padded_len(snap);
  // Rows/columns [memory | chunk | write memory]; the write copy (language modelling) is
  // read by nobody, so the chunk's rows are shown over [memory | chunk] only.
  const int64_t m = snap.trace.has(keys::kMtnBlocks) ? snap.trace.at(keys::kMtnBlocks)[0].item<int64_t>() : t - l;
  auto mean = a.mean(0).to(torch::kFloat32).contiguous();
  std::vector<int64_t> mem_src;
  if (snap.trace.has(keys::kMtnCandidateSource)) mem_src = to_vec(snap.trace.at(keys::kMtnCandidateSource)[0].narrow(0, 0, m));
  std::vector<int64_t> cols;
  viz::HeatmapSpec s;
  for (int64_t c = 0; c < m; ++c) {
    if (!mem_src.empty() && mem_src[c] < 0) continue;
    cols.push_back(c);
    s.col_labels.push_back(mem_src.empty() ? "<mem" + std::to_string(c) + ">" : token_of(doc, mem_src[c]));
  }
  const int64_t n_mem = static_cast<int64_t>(cols.size());
  for (int64_t j = 0; j < snap.length; ++j) {
    cols.push_back(m + j);
    s.col_labels.push_back(token_of(doc, snap.first_token + j));
  }
  for (int64_t j = 0; j < snap.length; ++j) {
    s.row_labels.push_back(token_of(doc, snap.first_token + j));
    for (int64_t c : cols) s.values.push_back(mean[m + j][c].item<float>());
  }
  const std::string model = snap.trace.has(keys::kMtnKeptSource) ? "MTN" : (m > 0 ? "naive memory" : "no memory");
  s.title = model + " joint layer " + std::to_string(layer) + " attention, chunk " + std::to_string(snap.segment) +
            " (mean over " + std::to_string(heads) + " heads)";
  s.x_label = n_mem > 0 ? "key: memory | chunk token" : "key: chunk token";
  s.y_label = "query: chunk token";
  s.colorbar_label = "attention weight";
  s.rows = static_cast<int>(snap.length);
  s.cols = static_cast<int>(cols.size());
  s.vmin = 0.f;
  if (n_mem > 0) {
    s.col_groups = {{0, "memory"}, {static_cast<int>(n_mem), "chunk"}};
    s.col_separators = {static_cast<int>(n_mem)};
  }
  return s;
}

std::vector<std::string> write_mtn_figures(const Snapshot& snap, const Document& doc, const std::string& dir,
                                           const FigureFormats& fm) {
  std::vector<std::string> out;
  if (!is_mtn_snapshot(snap)) return out;
  const auto& tr = snap.trace;
  if (tr.has(keys::kMtnKeptSource) && tr.has(keys::kMtnKeptImportance) && tr.has(keys::kMtnAge)) {
    emit(mtn_memory_figure(snap, doc), dir + "/mtn_memory", fm, out);
    if (tr.has(keys::kInputTokens)) emit(mtn_document_figure(snap, doc), dir + "/mtn_document", fm, out);
    if (fm.csv) {
      auto src = to_vec(tr.at(keys::kMtnKeptSource)[0]);
      auto imp = to_fvec(tr.at(keys::kMtnKeptImportance)[0]);
      auto age = to_vec(tr.at(keys::kMtnAge)[0]);
      std::vector<std::vector<std::string>> rows;
      for (size_t i = 0; i < src.size(); ++i) {
        const bool empty = src[i] < 0;
        rows.push_back({std::to_string(i), std::to_string(src[i]), empty ? "" : token_of(doc, src[i]),
                        empty ? "" : mtn_token_context(doc, src[i]), empty ? "" : fmt(imp[i]), std::to_string(age[i])});
      }
      viz::write_csv_table(dir + "/mtn_memory.csv", {"slot", "source", "token", "context", "importance", "age"}, rows);
      out.push_back(dir + "/mtn_memory.csv");
    }
  }
  if (tr.has(keys::kMtnImportance) && tr.has(keys::kMtnCandidateSource) && tr.has(keys::kMtnKeptIndex)) {
    emit(mtn_importance_figure(snap, doc), dir + "/mtn_importance", fm, out);
    if (fm.csv) {
      auto imp = to_fvec(tr.at(keys::kMtnImportance)[0]);
      auto cand = to_vec(tr.at(keys::kMtnCandidateSource)[0]);
      auto kept = to_vec(tr.at(keys::kMtnKeptIndex)[0]);
      const int64_t m = static_cast<int64_t>(imp.size()) - padded_len(snap);
      std::vector<std::vector<std::string>> rows;
      for (size_t c = 0; c < imp.size(); ++c) {
        if (cand[c] < 0) continue;
        const bool k = std::find(kept.begin(), kept.end(), static_cast<int64_t>(c)) != kept.end();
        rows.push_back({std::to_string(c), static_cast<int64_t>(c) < m ? "memory" : "chunk", std::to_string(cand[c]),
                        token_of(doc, cand[c]), fmt(imp[c]), k ? "1" : "0"});
      }
      viz::write_csv_table(dir + "/mtn_importance.csv", {"candidate", "from", "source", "token", "importance", "kept"},
                           rows);
      out.push_back(dir + "/mtn_importance.csv");
    }
  }
  if (!tr.keys_with_prefix(keys::kMtnJointAttnPrefix).empty() && snap.length > 0) {
    auto spec = mtn_attention_spec(snap, doc);
    emit(viz::make_heatmap(spec), dir + "/mtn_attention", fm, out);
    if (fm.csv) {
      viz::write_csv_matrix(dir + "/mtn_attention.csv", spec.rows, spec.cols, spec.values, spec.row_labels,
                            spec.col_labels);
      out.push_back(dir + "/mtn_attention.csv");
    }
  }
  return out;
}

}  // namespace mnemo::app
