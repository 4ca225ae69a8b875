#include "app/figures/compare.h"

#include "app/figures/attention.h"
#include "app/figures/memformer.h"

#include <algorithm>
#include <cmath>

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
  if (!a.has_writer() || !b.has_writer()) return refused("both models need a Memformer writer");
  if (a.slots != b.slots || a.cols != b.cols)
    return refused("the writer maps differ in shape (" + std::to_string(a.slots) + "x" + std::to_string(a.cols) + " vs " +
                   std::to_string(b.slots) + "x" + std::to_string(b.cols) + ")");
  const int h = head >= 0 && head < a.heads && head < b.heads ? head : -1;
  DiffMap d = diff_of(a.writer_block(h), b.writer_block(h), a.slots, a.cols);
  for (int i = 0; i < a.slots; ++i) d.row_labels.push_back(std::to_string(i));
  d.col_labels = a.col_labels;
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

viz::Figure side_by_side(const std::vector<viz::Figure>& figs, const std::string& title, float gap) {
  viz::Figure out;
  const float title_h = title.empty() ? 0.f : 30.f;
  float x = 0.f, h = 0.f;
  for (const auto& f : figs) {
    for (viz::Prim p : f.prims) {
      std::visit(
          [&](auto& q) {
            using T = std::decay_t<decltype(q)>;
            if constexpr (std::is_same_v<T, viz::Line>) {
              q.x0 += x;
              q.x1 += x;
              q.y0 += title_h;
              q.y1 += title_h;
            } else {
              q.x += x;
              q.y += title_h;
            }
          },
          p);
      out.prims.push_back(std::move(p));
    }
    x += f.width + gap;
    h = std::max(h, f.height);
  }
  out.width = std::max(1.f, x - (figs.empty() ? 0.f : gap));
  out.height = h + title_h;
  if (!title.empty()) viz::put_text(out, out.width / 2, 21.f, title, 16.f, viz::Rgb{25, 25, 25}, viz::Anchor::Middle, 0, true);
  return out;
}

void write_side_by_side(const StepData& a, const StepData& b, const std::string& label_a, const std::string& label_b,
                        int head, int attn_layer, bool same_scale, const std::string& base, const FigureFormats& fm,
                        std::vector<std::string>& out) {
  viz::HeatmapSpec sa, sb;
  DiffMap d;
  std::string what;
  if (a.has_writer() && b.has_writer()) {
    sa = writer_attention_spec(a, head);
    sb = writer_attention_spec(b, head);
    d = writer_difference(a, b, head);
    what = "writer attention";
  } else if (!a.attention.empty() && !b.attention.empty()) {
    const int la = std::max(0, std::min(attn_layer, static_cast<int>(a.attention.layers.size()) - 1));
    const int lb = std::max(0, std::min(attn_layer, static_cast<int>(b.attention.layers.size()) - 1));
    sa = attention_map_spec(a.attention, a.segment, la, head);
    sb = attention_map_spec(b.attention, b.segment, lb, head);
    d = attention_difference(a.attention, b.attention, attn_layer, head);
    what = "attention";
  } else {
    return;  // nothing of the same kind to put side by side
  }
  if (sa.rows <= 0 || sb.rows <= 0) return;
  sa.title = "A: " + label_a + " - " + sa.title;
  sb.title = "B: " + label_b + " - " + sb.title;
  if (same_scale) {
    auto finite_max = [](const std::vector<float>& v) {
      float m = NAN;
      for (float x : v)
        if (std::isfinite(x)) m = std::isfinite(m) ? std::max(m, x) : x;
      return m;
    };
    const float m = shared_max(finite_max(sa.values), finite_max(sb.values));
    sa.vmin = sb.vmin = 0.f;
    sa.vmax = sb.vmax = m;
  }
  std::vector<viz::Figure> figs = {viz::make_heatmap(sa), viz::make_heatmap(sb)};
  if (d.ok) figs.push_back(viz::make_heatmap(difference_spec(d, "A - B (" + what + ")")));
  write_figure(side_by_side(figs, "Side by side: " + label_a + " vs " + label_b + ", segment " + std::to_string(a.segment)),
               base, FigureFormats{fm.png, fm.svg, false, fm.stamp}, out);
  if (fm.csv) {
    write_heatmap(sa, base + "_a", FigureFormats{false, false, true, {}}, out);
    write_heatmap(sb, base + "_b", FigureFormats{false, false, true, {}}, out);
    if (d.ok) write_heatmap(difference_spec(d, "A - B"), base + "_diff", FigureFormats{false, false, true, {}}, out);
  }
}

}  // namespace mnemo::app
