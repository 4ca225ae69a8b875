#include "families/mtn/view/figures.h"

#include "app/figures/doc_text.h"
#include "app/figures/palette.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

namespace mnemo::app {

namespace {

using palette::kBand;
using palette::kInk;
using palette::kMuted;
using palette::kOutline;

std::string token_of(const Document& doc, int64_t t) {
  if (t < 0 || t >= doc.size()) return "#" + std::to_string(t);
  return token_text(doc, t);
}

// Age colour: viridis over 0..max_age; `pale` blends it with white so dark text stays legible.
viz::Rgb age_color(int64_t age, int64_t max_age, bool pale) {
  const float t = max_age > 0 ? static_cast<float>(age) / static_cast<float>(max_age) : 0.f;
  viz::Rgb c = viz::sample(viz::Colormap::Viridis, t);
  if (!pale) return c;
  auto mix = [](uint8_t v) { return static_cast<uint8_t>(0.45f * v + 0.55f * 255.f); };
  return viz::Rgb{mix(c.r), mix(c.g), mix(c.b)};
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
  viz::put_text(f, x, y + 12, "age", 12, kInk, viz::Anchor::Start, 0, true);
  viz::put_text(f, x, y + 27, "chunks survived", 11, kMuted);
  float yy = y + 36, w = viz::text_width("chunks survived", 11);
  for (int64_t a : show) {
    viz::put_rect(f, x, yy, 14, 14, age_color(a, max_age, pale), kMuted, 0.5f);
    viz::put_text(f, x + 20, yy + 11, std::to_string(a), 11, kInk);
    yy += 18;
  }
  return {w, yy - y};
}

// Ages of the memory's entries (-1: empty), for the legends.
std::vector<int64_t> entry_ages(const MtnData& m) {
  std::vector<int64_t> ages;
  for (const auto& e : m.entries) ages.push_back(e.age);
  return ages;
}

}  // namespace

std::string mtn_token_context(const Document& doc, int64_t t, int context) {
  if (t < 0 || t >= doc.size()) return "#" + std::to_string(t);
  std::string s = "t" + std::to_string(t) + "  ";
  for (int64_t u = std::max<int64_t>(0, t - context); u < t; ++u) s += token_text(doc, u);
  s += "[" + token_text(doc, t) + "]";
  for (int64_t u = t + 1; u < std::min<int64_t>(doc.size(), t + 1 + context); ++u) s += token_text(doc, u);
  return s;
}

viz::Figure mtn_memory_figure(const StepData& st, const Document& doc) {
  const MtnData& m = st.mtn;
  viz::BarSpec s;
  for (const auto& e : m.entries) {
    if (e.source < 0) continue;
    s.labels.push_back(mtn_token_context(doc, e.source));
    s.values.push_back(e.importance);
    s.colors.push_back(age_color(e.age, m.max_age, false));
  }
  s.title = "MTN memory after " + segment_title(st, "chunk") + ": " + std::to_string(m.kept) + " of " +
            std::to_string(m.entries.size()) + " entries";
  s.x_label = "kept token [in context]";
  s.y_label = "importance V_I\u00b7e + b_I";
  s.horizontal = true;
  if (s.values.empty()) {  // nothing kept yet: one empty bar that says so
    s.labels = {"(memory empty)"};
    s.values = {0.f};
    s.colors = {kMuted};
  }
  viz::Figure f = viz::make_bars(s);
  const float x = f.width + 4;
  auto [lw, lh] = age_legend(f, x, 44, entry_ages(m), m.max_age, false);
  f.width = x + lw + 14;
  f.height = std::max(f.height, 44 + lh + 14);
  return f;
}

viz::HeatmapSpec mtn_importance_spec(const StepData& st, const Document& doc) {
  const MtnData& m = st.mtn;
  viz::HeatmapSpec s;
  for (size_t c = 0; c < m.cand_source.size(); ++c) {
    s.values.push_back(m.cand_importance[c]);
    s.col_labels.push_back(token_of(doc, m.cand_source[c]));
  }
  s.title = "MTN importance of keep_m_max's candidates, " + segment_title(st, "chunk");
  s.x_label = "previous memory | chunk tokens   (outlined: kept for the next chunk)";
  s.y_label = "";
  s.colorbar_label = "importance";
  s.rows = 1;
  s.cols = static_cast<int>(s.values.size());
  s.row_labels = {"importance"};
  s.cmap = viz::Colormap::Diverging;
  s.cell = 18;
  if (m.n_mem_candidates > 0) {
    s.col_groups.push_back({0, "memory"});
    s.col_separators.push_back(m.n_mem_candidates);
  }
  s.col_groups.push_back({m.n_mem_candidates, "chunk " + std::to_string(st.segment)});
  return s;
}

viz::Figure mtn_importance_figure(const StepData& st, const Document& doc) {
  viz::Figure f = viz::make_heatmap(mtn_importance_spec(st, doc));
  // Outline the kept candidates (cells are the figure's cell rects in row-major order).
  std::vector<const viz::Rect*> cells;
  for (const auto& p : f.prims)
    if (const auto* r = std::get_if<viz::Rect>(&p); r && r->cell) cells.push_back(r);
  std::vector<viz::Rect> outlines;
  for (size_t c = 0; c < st.mtn.cand_kept.size() && c < cells.size(); ++c) {
    if (!st.mtn.cand_kept[c]) continue;
    const viz::Rect& cell = *cells[c];
    viz::Rect o;
    o.x = cell.x + 1;
    o.y = cell.y + 1;
    o.w = cell.w - 2;
    o.h = cell.h - 2;
    o.fill = std::nullopt;
    o.stroke = kOutline;
    o.stroke_width = 2.f;
    outlines.push_back(o);
  }
  for (const auto& o : outlines) f.prims.emplace_back(o);
  return f;
}

viz::Figure mtn_document_figure(const StepData& st, const Document& doc) {
  const MtnData& m = st.mtn;
  const int64_t l = std::max<int64_t>(1, st.segment_len);
  const int64_t first = st.first_token, start = m.view_first, end = std::min(doc.size(), m.view_end);
  std::map<int64_t, int64_t> age_of;
  for (const auto& e : m.entries)
    if (e.source >= 0) age_of[e.source] = e.age;
  int64_t hidden = 0;
  for (const auto& [t, a] : age_of) hidden += t < start ? 1 : 0;

  const float size = 13, line_h = 21, max_w = 860, pad = 14;
  const std::vector<std::vector<int64_t>> lines = token_lines(doc, start, end, size, max_w);

  viz::Figure f;
  const std::string title = "MTN memory in the document after " + segment_title(st, "chunk");
  char sub[256];
  std::snprintf(sub, sizeof sub,
                "%zu of %zu entries kept; highlight colour = age (chunks survived); grey band = chunk %lld; | = chunk start",
                age_of.size(), m.entries.size(), static_cast<long long>(st.segment));
  std::string subtitle = sub;
  if (hidden > 0) subtitle += "; " + std::to_string(hidden) + " kept tokens lie before the text shown";
  viz::put_text(f, pad, pad + 15, title, 15, kInk, viz::Anchor::Start, 0, true);
  viz::put_text(f, pad, pad + 34, subtitle, 11, kMuted);
  float y = pad + 48;
  for (const auto& line : lines) {
    const auto [text, xs] = line_text(doc, line, pad, size);
    // Chunk band (runs), kept highlights, chunk-start marks, then the text on top.
    for (size_t i = 0; i < line.size();) {
      if (line[i] < first) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && line[j] >= first) ++j;
      viz::put_rect(f, xs[i], y, xs[j] - xs[i], line_h, kBand);
      i = j;
    }
    for (size_t i = 0; i < line.size(); ++i) {
      auto it = age_of.find(line[i]);
      if (it == age_of.end()) continue;
      viz::put_rect(f, xs[i], y + 2, std::max(xs[i + 1] - xs[i], 4.f), line_h - 4, age_color(it->second, m.max_age, true),
                    kMuted, 0.5f);
    }
    for (size_t i = 0; i < line.size(); ++i)
      if (line[i] % l == 0) viz::put_line(f, xs[i], y + 1, xs[i], y + line_h - 1, kMuted, 1.f);
    viz::put_text(f, pad, y + 15, text, size, kInk);
    y += line_h;
  }
  float width = std::max(max_w + 40, viz::text_width(subtitle, 11) + 2 * pad);
  const float lx = width + 8;
  auto [lw, lh] = age_legend(f, lx, pad + 48, entry_ages(m), m.max_age, true);
  f.width = std::ceil(lx + lw + pad);
  f.height = std::ceil(std::max(y, pad + 48 + lh) + pad);
  return f;
}

void write_mtn_memory(const StepData& st, const Document& doc, const std::string& memory_base,
                      const std::string& document_base, const std::string& importance_base, const FigureFormats& fm,
                      std::vector<std::string>& out) {
  const MtnData& m = st.mtn;
  if (!m.present) return;
  write_figure(mtn_memory_figure(st, doc), memory_base, fm, out);
  if (st.segment_len > 0) write_figure(mtn_document_figure(st, doc), document_base, fm, out);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const MtnEntry& e = m.entries[i];
    const bool empty = e.source < 0;
    rows.push_back({std::to_string(i), std::to_string(e.source), empty ? "" : token_of(doc, e.source),
                    empty ? "" : mtn_token_context(doc, e.source), empty ? "" : viz::csv_number(e.importance),
                    std::to_string(e.age)});
  }
  write_table(memory_base + ".csv", {"slot", "source", "token", "context", "importance", "age"}, rows, fm, out);
  if (m.cand_source.empty()) return;
  write_figure(mtn_importance_figure(st, doc), importance_base, fm, out);
  std::vector<std::vector<std::string>> crows;
  for (size_t c = 0; c < m.cand_source.size(); ++c)
    crows.push_back({std::to_string(c), static_cast<int>(c) < m.n_mem_candidates ? "memory" : "chunk",
                     std::to_string(m.cand_source[c]), token_of(doc, m.cand_source[c]), viz::csv_number(m.cand_importance[c]),
                     m.cand_kept[c] ? "1" : "0"});
  write_table(importance_base + ".csv", {"candidate", "from", "source", "token", "importance", "kept"}, crows, fm, out);
}

}  // namespace mnemo::app
