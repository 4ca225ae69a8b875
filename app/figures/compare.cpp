#include "app/figures/compare.h"

#include "app/figures/attention.h"
#include "app/figures/benefit.h"
#include "app/figures/memformer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {
DiffMap diff_of(const float* a, const float* b, int rows, int cols) {
  DiffMap d;
  d.ok = true;
  d.rows = rows;
  d.cols = cols;
  d.values.resize(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < d.values.size(); ++i) {
    d.values[i] = a[i] - b[i];
    if (std::isfinite(d.values[i])) d.absmax = std::max(d.absmax, std::fabs(d.values[i]));
  }
  return d;
}
DiffMap refused(const std::string& why) {
  DiffMap d;
  d.why = why;
  return d;
}
}  // namespace

DiffMap writer_difference(const StepData& a, const StepData& b, int head) {
  if (!a.memformer.has_writer() || !b.memformer.has_writer()) return refused("both models need a Memformer writer");
  if (a.memformer.slots != b.memformer.slots || a.memformer.cols != b.memformer.cols)
    return refused("the writer maps differ in shape (" + std::to_string(a.memformer.slots) + "x" +
                   std::to_string(a.memformer.cols) + " vs " + std::to_string(b.memformer.slots) + "x" +
                   std::to_string(b.memformer.cols) + ")");
  const int h = head >= 0 && head < a.memformer.heads && head < b.memformer.heads ? head : -1;
  DiffMap d = diff_of(a.memformer.writer_block(h), b.memformer.writer_block(h), a.memformer.slots, a.memformer.cols);
  for (int i = 0; i < a.memformer.slots; ++i) d.row_labels.push_back(std::to_string(i));
  d.col_labels = a.memformer.col_labels;
  return d;
}

DiffMap attention_difference(const AttentionData& a, const AttentionData& b, int li, int head) {
  if (a.empty() || b.empty()) return refused("both models need an attention map");
  if (a.rows != b.rows || a.cols != b.cols)
    return refused("the attention maps differ in shape (" + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " vs " +
                   std::to_string(b.rows) + "x" + std::to_string(b.cols) + ")");
  const int l = li >= 0 && li < static_cast<int>(a.layers.size()) && li < static_cast<int>(b.layers.size()) ? li : 0;
  const int h = head >= 0 && head < a.heads && head < b.heads ? head : -1;
  const float* ma = a.map(l, h);
  const float* mb = b.map(l, h);
  if (!ma || !mb) return refused("no map at that layer");
  DiffMap d = diff_of(ma, mb, a.rows, a.cols);
  d.row_labels = a.row_labels;
  d.col_labels = a.col_labels;
  return d;
}

float shared_max(float a, float b) {
  if (!std::isfinite(a)) return b;
  if (!std::isfinite(b)) return a;
  return std::max(a, b);
}

viz::HeatmapSpec difference_spec(const DiffMap& d, const std::string& title) {
  viz::HeatmapSpec s;
  if (!d.ok) return s;
  s.title = title;
  s.rows = d.rows;
  s.cols = d.cols;
  s.values = d.values;
  s.row_labels = d.row_labels;
  s.col_labels = d.col_labels;
  s.cmap = viz::Colormap::Diverging;
  const float m = d.absmax > 0.f ? d.absmax : 1e-6f;
  s.vmin = -m;
  s.vmax = m;
  s.colorbar_label = "A - B";
  return s;
}

namespace {

// Appends `f`'s primitives to `out`, moved by (dx, dy): how side_by_side and stacked place figures.
void append_shifted(viz::Figure& out, const viz::Figure& f, float dx, float dy) {
  for (viz::Prim p : f.prims) {
    std::visit(
        [&](auto& q) {
          using T = std::decay_t<decltype(q)>;
          if constexpr (std::is_same_v<T, viz::Line>) {
            q.x0 += dx;
            q.x1 += dx;
            q.y0 += dy;
            q.y1 += dy;
          } else {
            q.x += dx;
            q.y += dy;
          }
        },
        p);
    out.prims.push_back(std::move(p));
  }
}

}  // namespace

viz::Figure side_by_side(const std::vector<viz::Figure>& figs, const std::string& title, float gap) {
  viz::Figure out;
  const float title_h = title.empty() ? 0.f : 30.f;
  float x = 0.f, h = 0.f;
  for (const auto& f : figs) {
    append_shifted(out, f, x, title_h);
    x += f.width + gap;
    h = std::max(h, f.height);
  }
  out.width = std::max(1.f, x - (figs.empty() ? 0.f : gap));
  out.height = h + title_h;
  if (!title.empty()) viz::put_text(out, out.width / 2, 21.f, title, 16.f, viz::Rgb{25, 25, 25}, viz::Anchor::Middle, 0, true);
  return out;
}

std::string SideSummary::text() const {
  char buf[200];
  std::string t;
  if (std::isfinite(loss_nats)) {
    if (first >= 0)
      std::snprintf(buf, sizeof buf, "loss %.4f nats/token (%s %lld..%lld)", loss_nats, next_segment ? "next segment," : "tokens",
                    static_cast<long long>(first), static_cast<long long>(last));
    else
      std::snprintf(buf, sizeof buf, "loss %.4f nats/token", loss_nats);
    t = buf;
  } else {
    t = "loss: none here (no token to predict)";
  }
  if (std::isfinite(saved_bits) && saved_tokens > 0) {
    std::snprintf(buf, sizeof buf, " - memory saves %.1f bits vs reset (%.2f/token)", saved_bits,
                  saved_bits / static_cast<double>(saved_tokens));
    t += buf;
  } else {
    t += " - memory saves: not computed";
  }
  return t;
}

SideSummary side_summary(const StepData& st) {
  SideSummary s;
  s.loss_nats = st.loss;
  if (!st.token_losses.empty()) {
    s.first = st.token_losses.first;
    s.last = st.token_losses.first + static_cast<int64_t>(st.token_losses.values.size()) - 1;
  }
  s.next_segment = st.loss_next_segment;
  const auto b = memory_benefit(st);
  for (const auto& e : b)
    if (std::isfinite(e.bits_vs_reset())) ++s.saved_tokens;
  if (s.saved_tokens > 0) s.saved_bits = segment_benefit_bits(st);
  return s;
}

float shown_attention_max(const StepData& st, bool writer, int writer_head, int li, int attn_head) {
  if (writer) {
    if (!st.memformer.has_writer()) return NAN;
    const size_t k = writer_head < 0 || writer_head >= st.memformer.heads ? 0 : static_cast<size_t>(writer_head) + 1;
    return k < st.memformer.block_max.size() ? st.memformer.block_max[k] : NAN;
  }
  if (st.attention.empty()) return NAN;
  const int l = li >= 0 && li < static_cast<int>(st.attention.layers.size()) ? li : 0;
  return st.attention.map_max(l, attn_head);
}

viz::HeatmapSpec side_map_spec(const StepData& st, int writer_head, int attn_layer, int attn_head, int selected_slot,
                               std::string* what) {
  viz::HeatmapSpec s;
  if (st.memformer.has_writer()) {
    s = writer_attention_spec(st, writer_head);
    if (selected_slot >= 0 && selected_slot < s.rows) s.highlight_row = selected_slot;
    if (what) *what = "writer attention";
  } else if (!st.attention.empty()) {
    const AttentionData& a = st.attention;
    const int l = std::max(0, std::min(attn_layer, static_cast<int>(a.layers.size()) - 1));
    s = attention_map_spec(a, st.segment, l, attn_head);
    for (const auto& b : a.row_blocks)
      if (b.name == "write" && selected_slot >= 0 && selected_slot < b.count && b.first + selected_slot < s.rows)
        s.highlight_row = b.first + selected_slot;
    if (what) *what = "attention";
  }
  return s;
}

namespace {
float finite_max(const std::vector<float>& v) {
  float m = NAN;
  for (float x : v)
    if (std::isfinite(x)) m = std::isfinite(m) ? std::max(m, x) : x;
  return m;
}

// `s` drawn `width` px wide and about `height` px tall: its cells stretched to fill (the
// margins of labels and colour bar measured on a first drawing).
viz::Figure fitted_heatmap(viz::HeatmapSpec s, float width, float height) {
  s.cell = 10.f;
  s.cell_h = 10.f;
  const viz::Figure probe = viz::make_heatmap(s);
  const float mw = probe.width - 10.f * static_cast<float>(s.cols), mh = probe.height - 10.f * static_cast<float>(s.rows);
  s.cell = std::max(0.5f, (width - mw) / static_cast<float>(s.cols));
  s.cell_h = std::max(0.5f, std::min((height - mh) / static_cast<float>(s.rows), std::max(s.cell, 40.f)));
  return viz::make_heatmap(s);
}

// Figures placed top to bottom, `gap` px apart, left-aligned.
viz::Figure stacked(const std::vector<viz::Figure>& figs, float gap) {
  viz::Figure out;
  float y = 0.f, w = 0.f;
  for (const auto& f : figs) {
    append_shifted(out, f, 0.f, y);
    y += f.height + gap;
    w = std::max(w, f.width);
  }
  out.width = std::max(1.f, w);
  out.height = std::max(1.f, y - (figs.empty() ? 0.f : gap));
  return out;
}

// A side's heading: "A: <label>" in the side's colour, then its numbers.
viz::Figure heading(const std::string& side, const std::string& label, const std::string& numbers, viz::Rgb colour,
                    float width) {
  viz::Figure f;
  f.width = width;
  f.height = 24.f;
  const std::string name = side + ": " + label;
  viz::put_text(f, 8.f, 17.f, name, 16.f, colour, viz::Anchor::Start, 0, true);
  viz::put_text(f, 8.f + viz::text_width(name, 16.f, true) + 14.f, 17.f, numbers, 14.f, viz::Rgb{60, 60, 60}, viz::Anchor::Start);
  return f;
}
}  // namespace

viz::Figure side_by_side_slide(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                               int writer_head, int attn_layer, int attn_head, bool same_scale, int selected_slot,
                               float width, ColourRange range_a, ColourRange range_b) {
  std::string wa, wb;
  viz::HeatmapSpec sa = side_map_spec(a, writer_head, attn_layer, attn_head, selected_slot, &wa);
  viz::HeatmapSpec sb = side_map_spec(b, writer_head, attn_layer, attn_head, selected_slot, &wb);
  if (sa.rows <= 0 && sb.rows <= 0) return viz::Figure{};
  if (same_scale) {
    const float m = shared_max(finite_max(sa.values), finite_max(sb.values));
    if (std::isfinite(m) && m > 0.f) {
      sa.vmin = sb.vmin = 0.f;
      sa.vmax = sb.vmax = m;
    }
  }
  // The ranges the panels draw win (the app's export: the slide shows what the screen does).
  auto use = [](viz::HeatmapSpec& s, const ColourRange& r) {
    if (!r.given()) return;
    s.vmin = r.lo;
    s.vmax = r.hi;
  };
  use(sa, range_a);
  use(sb, range_b);
  const float slide_h = std::round(width * 9.f / 16.f);
  const float title_h = 34.f, head_h = 24.f;
  const float map_h = std::floor((slide_h - title_h - 2.f * head_h - 3.f * 12.f) / 2.f);
  char scale[128] = "";
  // Each side's range: the one it is drawn on (0..its own largest when none was set).
  auto lo = [](const viz::HeatmapSpec& s) { return std::isfinite(s.vmin) ? s.vmin : 0.f; };
  auto hi = [](const viz::HeatmapSpec& s) { return std::isfinite(s.vmax) ? s.vmax : finite_max(s.values); };
  if (sa.rows > 0 && sb.rows > 0 && lo(sa) == lo(sb) && hi(sa) == hi(sb))
    std::snprintf(scale, sizeof scale, "; one colour scale %.4g..%.4g", lo(sa), hi(sa));
  else if (sa.rows > 0 && sb.rows > 0)
    std::snprintf(scale, sizeof scale, "; colour A %.4g..%.4g, B %.4g..%.4g", lo(sa), hi(sa), lo(sb), hi(sb));
  else if (sa.rows > 0 || sb.rows > 0)
    std::snprintf(scale, sizeof scale, "; colour %.4g..%.4g", sa.rows > 0 ? lo(sa) : lo(sb), sa.rows > 0 ? hi(sa) : hi(sb));
  std::vector<viz::Figure> rows;
  viz::Figure title;
  title.width = width;
  title.height = title_h;
  viz::put_text(title, width / 2, 22.f,
                "Side by side: " + label_a + " vs " + label_b + ", segment " + std::to_string(a.segment) + scale, 18.f,
                viz::Rgb{25, 25, 25}, viz::Anchor::Middle, 0, true);
  rows.push_back(title);
  auto side = [&](const char* name, const std::string& label, const StepData& st, viz::HeatmapSpec& s, viz::Rgb colour) {
    rows.push_back(heading(name, label, side_summary(st).text(), colour, width));
    if (s.rows > 0) {
      s.title = "";  // in the heading
      rows.push_back(fitted_heatmap(s, width, map_h));
    } else {
      viz::Figure none;
      none.width = width;
      none.height = 28.f;
      viz::put_text(none, 8.f, 18.f, "no attention map of this model at this step", 14.f, viz::Rgb{120, 120, 120});
      rows.push_back(none);
    }
  };
  side("A", label_a + (sa.title.empty() ? "" : " - " + sa.title), a, sa, viz::Rgb{31, 100, 180});
  side("B", label_b + (sb.title.empty() ? "" : " - " + sb.title), b, sb, viz::Rgb{200, 95, 20});
  return stacked(rows, 12.f);
}

void write_side_by_side(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                        int writer_head, int attn_layer, int attn_head, bool same_scale, int selected_slot,
                        const std::string& base, const FigureFormats& fm, std::vector<std::string>& out,
                        ColourRange range_a, ColourRange range_b) {
  const viz::Figure slide = side_by_side_slide(a, b, label_a, label_b, writer_head, attn_layer, attn_head, same_scale,
                                               selected_slot, 1600.f, range_a, range_b);
  if (slide.width <= 1.f) return;  // neither side has a map
  write_figure(slide, base, FigureFormats{fm.png, fm.svg, false, fm.stamp}, out);
  // A - B when the two maps are of one kind and shape, at the slide's width.
  DiffMap d;
  std::string what;
  if (a.memformer.has_writer() && b.memformer.has_writer()) {
    d = writer_difference(a, b, writer_head);
    what = "writer attention";
  } else if (!a.attention.empty() && !b.attention.empty()) {
    d = attention_difference(a.attention, b.attention, attn_layer, attn_head);
    what = "attention";
  }
  if (d.ok) {
    viz::HeatmapSpec ds = difference_spec(d, "A - B (" + what + "): " + label_a + " minus " + label_b + ", segment " +
                                                 std::to_string(a.segment));
    if (selected_slot >= 0 && selected_slot < ds.rows && a.memformer.has_writer()) ds.highlight_row = selected_slot;
    write_figure(fitted_heatmap(ds, 1600.f, 420.f), base + "_diff", FigureFormats{fm.png, fm.svg, false, fm.stamp}, out);
  }
  if (fm.csv) {
    std::string w;
    const viz::HeatmapSpec sa = side_map_spec(a, writer_head, attn_layer, attn_head, -1, &w);
    const viz::HeatmapSpec sb = side_map_spec(b, writer_head, attn_layer, attn_head, -1, &w);
    if (sa.rows > 0) write_heatmap(sa, base + "_a", FigureFormats{false, false, true, {}}, out);
    if (sb.rows > 0) write_heatmap(sb, base + "_b", FigureFormats{false, false, true, {}}, out);
    if (d.ok) write_heatmap(difference_spec(d, "A - B"), base + "_diff", FigureFormats{false, false, true, {}}, out);
  }
}

}  // namespace mnemo::app
