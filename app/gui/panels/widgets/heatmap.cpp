#include "app/gui/panels/widgets/heatmap.h"

#include "viz/charts.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app::ui {

namespace {

uint32_t pack(viz::Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

// 1, 2, 5, 10, 20, 50, ... >= n (strides that read naturally on an axis).
int nice_stride(double n) {
  if (!(n > 1.0)) return 1;
  for (int base = 1;; base *= 10) {
    for (int m : {1, 2, 5})
      if (base * m >= n) return base * m;
    if (base > 100000000) return base;
  }
}

std::string label_of(const std::vector<std::string>* labels, int offset, int i) {
  if (labels) return static_cast<size_t>(i) < labels->size() ? (*labels)[static_cast<size_t>(i)] : std::string();
  return std::to_string(offset + i);
}

// Widest of labels [from, to) (index labels: the widest number).
float widest(const std::vector<std::string>* labels, int offset, int from, int to) {
  if (to <= from) return 0.f;
  if (!labels) return ImGui::CalcTextSize(std::to_string(offset + to - 1).c_str()).x;
  float w = 0.f;
  const int m = std::min<int>(to, static_cast<int>(labels->size()));
  // Measuring thousands of labels each frame is wasteful; sample evenly beyond 512.
  const int step = std::max(1, (m - from) / 512);
  for (int i = from; i < m; i += step) w = std::max(w, ImGui::CalcTextSize((*labels)[static_cast<size_t>(i)].c_str()).x);
  return w;
}
float widest(const std::vector<std::string>* labels, int offset, int n) { return widest(labels, offset, 0, n); }

}  // namespace

std::string heatmap_axis_title(const std::string& x_title, int col_stride, int row_stride) {
  std::string note;
  if (col_stride > 1) note = "every " + viz::ordinal(col_stride) + " column";
  if (row_stride > 1) note += (note.empty() ? "every " : ", ") + viz::ordinal(row_stride) + " row";
  if (note.empty()) return x_title;
  note += " labelled; hover a cell for each";
  return x_title.empty() ? note : x_title + "  (" + note + ")";
}

std::string heatmap_axis_title_fit(const std::string& x_title, int col_stride, int row_stride, float max_w,
                                   const std::function<float(const std::string&)>& width) {
  const std::string full = heatmap_axis_title(x_title, col_stride, row_stride);
  if (col_stride <= 1 && row_stride <= 1) return full;
  std::vector<std::string> forms{full};
  const std::string hover = "; hover a cell for each";
  std::string shorter = full;
  if (const auto at = shorter.find(hover); at != std::string::npos) shorter.erase(at, hover.size());
  forms.push_back(shorter);
  std::string brief;
  if (col_stride > 1) brief = "every " + viz::ordinal(col_stride) + " col";
  if (row_stride > 1) brief += (brief.empty() ? "every " : ", ") + viz::ordinal(row_stride) + " row";
  forms.push_back("labels: " + brief);
  forms.push_back(brief);
  for (const auto& f : forms)
    if (width(f) <= max_w) return f;
  return forms.back();
}

std::vector<int> col_label_priority(const HeatmapAxes& axes, int cols) {
  std::vector<int> priority;
  if (axes.highlight_col >= 0 && axes.highlight_col < cols) priority.push_back(axes.highlight_col);
  if (axes.col_labels) {
    for (int c : axes.always_label_cols)
      if (c > 0 && c < cols - 1) priority.push_back(c);
    priority.push_back(0);
    if (cols > 1) priority.push_back(cols - 1);
  }
  return priority;
}

std::vector<ColLabel> place_col_labels(int cols, const std::function<float(int)>& width, float x0, float cw, float lo,
                                       float hi, const std::vector<int>& priority, int stride, float gap) {
  std::vector<ColLabel> out;
  std::vector<char> tried(static_cast<size_t>(cols), 0);
  auto try_place = [&](int c) {
    if (c < 0 || c >= cols || tried[static_cast<size_t>(c)]) return;
    tried[static_cast<size_t>(c)] = 1;
    const float w = width(c);
    float x = x0 + cw * (static_cast<float>(c) + 0.5f) - 0.5f * w;
    x = std::max(lo, std::min(x, hi - w));
    for (const ColLabel& f : out)
      if (x < f.x + f.w + gap && f.x < x + w + gap) return;
    out.push_back({c, x, w});
  };
  for (int c : priority) try_place(c);
  for (int c = 0; c < cols; c += std::max(1, stride)) try_place(c);
  return out;
}

std::vector<GroupLabel> place_group_labels(const std::vector<GroupSpan>& spans,
                                           const std::function<float(const std::string&)>& width, float gap) {
  std::vector<GroupLabel> out;
  const std::string ell = "\xE2\x80\xA6";  // an ellipsis
  for (size_t g = 0; g < spans.size(); ++g) {
    const GroupSpan& s = spans[g];
    const float lo = out.empty() ? s.lo : std::max(s.lo, out.back().x + out.back().w + gap);
    const float room = s.hi - lo;
    std::string text = s.text;
    float w = width(text);
    if (w > room) {
      // The longest beginning (whole code points) that fits with the ellipsis; none: left out.
      text.clear();
      for (size_t end = s.text.size(); end > 0;) {
        --end;
        while (end > 0 && (static_cast<unsigned char>(s.text[end]) & 0xC0) == 0x80) --end;
        if (end == 0) break;
        const std::string t = s.text.substr(0, end) + ell;
        if (width(t) <= room) {
          text = t;
          break;
        }
      }
      if (text.empty()) continue;
      w = width(text);
    }
    float x = 0.5f * (s.x0 + s.x1 - w);
    x = std::max(lo, std::min(x, s.hi - w));
    out.push_back({static_cast<int>(g), x, w, text});
  }
  return out;
}

namespace {

const ImU32 kLabel = IM_COL32(200, 200, 205, 255);
const ImU32 kHighlight = IM_COL32(255, 214, 10, 255);
const ImU32 kSeparator = IM_COL32(255, 255, 255, 200);

}  // namespace

ColorLut::ColorLut(viz::Colormap map) : map_(map) {
  for (int i = 0; i < 256; ++i) table_[i] = pack(viz::sample(map, static_cast<float>(i) / 255.f));
  nan_ = pack(viz::nan_color(map));
  table_[256] = nan_;
}

uint32_t ColorLut::at(float t) const {
  if (std::isnan(t)) return nan_;
  const float c = std::min(1.f, std::max(0.f, t));
  return table_[static_cast<int>(c * 255.f + 0.5f)];
}

void heatmap_rgba(const float* values, int rows, int cols, float vmin, float vmax, const ColorLut& lut, int max_side,
                  std::vector<uint8_t>* out, int* w, int* h) {
  const int ow = std::max(1, std::min(cols, max_side));
  const int oh = std::max(1, std::min(rows, max_side));
  out->resize(static_cast<size_t>(ow) * static_cast<size_t>(oh) * 4);
  const float range = vmax - vmin;
  const bool flat = !(range > 0.f && std::isfinite(range));
  // index = round((v - vmin) / range * 255), clamped; non-finite values take the marker
  // entry (they are markers, never clamped into the scale: docs/architecture.md#errors).
  const float scale = flat ? 0.f : 255.f / range;
  const float offset = flat ? 128.f : 0.5f - vmin * scale;
  const uint32_t* table = lut.table();
  auto* px = reinterpret_cast<uint32_t*>(out->data());
  for (int y = 0; y < oh; ++y) {
    const int r = oh == rows ? y : static_cast<int>((static_cast<int64_t>(y) * rows) / oh);
    const float* row = values + static_cast<size_t>(r) * static_cast<size_t>(cols);
    uint32_t* dst = px + static_cast<size_t>(y) * static_cast<size_t>(ow);
    for (int x = 0; x < ow; ++x) {
      const float v = ow == cols ? row[x] : row[(static_cast<int64_t>(x) * cols) / ow];
      int idx = 256;
      if (std::isfinite(v)) {
        const float f = v * scale + offset;
        idx = f <= 0.f ? 0 : (f >= 255.f ? 255 : static_cast<int>(f));
      }
      dst[x] = table[idx];
    }
  }
  *w = ow;
  *h = oh;
}

bool HeatmapImage::update(uint64_t key, const float* values, int rows, int cols, float vmin, float vmax, viz::Colormap map,
                          const std::vector<char>* gap_cols) {
  if (key == key_ && tex_.valid() == (rows > 0 && cols > 0)) return false;
  key_ = key;
  rows_ = rows;
  cols_ = cols;
  if (rows <= 0 || cols <= 0 || !values || !tex_.api()) {
    tex_.reset();
    return false;
  }
  if (lut_.map() != map) lut_ = ColorLut(map);
  int w = 0, h = 0;
  heatmap_rgba(values, rows, cols, vmin, vmax, lut_, tex_.api()->max_size(), &pixels_, &w, &h);
  if (gap_cols && static_cast<int>(gap_cols->size()) == cols && w > 0)
    for (int x = 0; x < w; ++x) {
      const int c = static_cast<int>(static_cast<int64_t>(x) * cols / w);  // the column the image pixel samples
      if (!(*gap_cols)[static_cast<size_t>(c)]) continue;
      for (int y = 0; y < h; ++y) {
        uint8_t* p = &pixels_[(static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)) * 4];
        p[0] = p[1] = p[2] = kGapGrey;
        p[3] = 255;
      }
    }
  tex_.upload(w, h, pixels_.data());
  return true;
}

bool HeatmapImage::update_rgba(uint64_t key, const uint8_t* rgba, int rows, int cols) {
  if (key == key_ && tex_.valid() == (rows > 0 && cols > 0)) return false;
  key_ = key;
  rows_ = rows;
  cols_ = cols;
  if (rows <= 0 || cols <= 0 || !rgba || !tex_.api()) {
    tex_.reset();
    return false;
  }
  const int max_side = tex_.api()->max_size();
  if (rows <= max_side && cols <= max_side) {
    tex_.upload(cols, rows, rgba);
    return true;
  }
  const int ow = std::min(cols, max_side), oh = std::min(rows, max_side);
  pixels_.resize(static_cast<size_t>(ow) * static_cast<size_t>(oh) * 4);
  auto* src = reinterpret_cast<const uint32_t*>(rgba);
  auto* dst = reinterpret_cast<uint32_t*>(pixels_.data());
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x)
      dst[static_cast<size_t>(y) * ow + x] =
          src[static_cast<size_t>((static_cast<int64_t>(y) * rows) / oh) * cols + (static_cast<int64_t>(x) * cols) / ow];
  tex_.upload(ow, oh, pixels_.data());
  return true;
}

const Texture& ColorbarImage::texture(viz::Colormap map) {
  if (!made_ || map != map_ || !tex_.valid()) {
    if (tex_.api()) {
      uint32_t px[256];
      ColorLut lut(map);
      for (int i = 0; i < 256; ++i) px[i] = lut.at(static_cast<float>(255 - i) / 255.f);  // top = max
      tex_.upload(1, 256, reinterpret_cast<const uint8_t*>(px), true);
    }
    map_ = map;
    made_ = true;
  }
  return tex_;
}

float colorbar_width() { return ImGui::CalcTextSize("-0.000").x + 34.f; }

namespace {

// The heatmap's layout: the map's corners inside the widget, its cell size, the margins and
// the label strides that fit.
struct HeatmapLayout {
  ImVec2 origin, size, pmin, pmax;
  int rows = 0, cols = 0;
  float line_h = 0.f, group_w = 0.f, right = 0.f, cw = 0.f, rh = 0.f;
  bool row_labels = false, col_labels = false;
  int row_stride = 1, col_stride = 1;
  std::string x_title;  // the x title, with the note of a thinned axis
};

HeatmapLayout layout_heatmap(const HeatmapAxes& axes, ImVec2 origin, ImVec2 size, int rows, int cols) {
  HeatmapLayout l;
  l.origin = origin;
  l.size = size;
  l.rows = rows;
  l.cols = cols;
  l.line_h = ImGui::GetTextLineHeight();
  const float line_h = l.line_h;
  l.row_labels = !(axes.row_labels && axes.row_labels->empty());
  l.col_labels = !(axes.col_labels && axes.col_labels->empty());
  for (const auto& g : axes.row_groups) l.group_w = std::max(l.group_w, ImGui::CalcTextSize(g.second.c_str()).x);
  if (l.group_w > 0.f) l.group_w += 10.f;
  const float left = l.group_w + (l.row_labels ? widest(axes.row_labels, axes.row_label_offset, rows) + 6.f : 2.f);
  const bool top_line = !axes.col_groups.empty() || !axes.y_title.empty() || (axes.colorbar && !axes.colorbar_label.empty());
  const float top = top_line ? line_h + 4.f : 2.f;
  l.right = axes.colorbar ? colorbar_width() : 2.f;
  l.pmin = ImVec2(origin.x + left, origin.y + top);
  l.pmax = ImVec2(origin.x + size.x - l.right, origin.y);
  if (l.pmax.x - l.pmin.x < 4.f) l.pmax.x = l.pmin.x + 4.f;
  l.cw = (l.pmax.x - l.pmin.x) / static_cast<float>(cols);
  // Column labels are thinned to a stride that fits the widest of them (the first and last
  // columns, "self" and "<cls>", are left out of the measure: they are placed first anyway).
  const float col_label_w = (axes.col_labels && cols > 2 ? widest(axes.col_labels, 0, 1, cols - 1)
                                                         : widest(axes.col_labels, axes.col_label_offset, cols)) + 4.f;
  l.col_stride = l.col_labels ? nice_stride(col_label_w / std::max(l.cw, 1e-3f)) : 1;
  // Index labels (no label vector) thin like any numeric axis; named ones (tokens) say so.
  const bool named_cols = axes.col_labels != nullptr, named_rows = axes.row_labels != nullptr;
  // A thinned axis says so under the map ("every 2nd column label shown"), so the labels that
  // are drawn never read as the tokens themselves; hovering a cell names its row and column.
  auto bottom_for = [&](bool note) {
    return (l.col_labels ? line_h + 3.f : 2.f) + (axes.x_title.empty() && !note ? 0.f : line_h + 2.f);
  };
  auto row_stride_for = [&](float bottom) {
    const float h = std::max(origin.y + size.y - bottom - l.pmin.y, 4.f);
    return l.row_labels ? nice_stride((line_h + 1.f) / std::max(h / static_cast<float>(rows), 1e-3f)) : 1;
  };
  l.row_stride = row_stride_for(bottom_for(false));
  const bool note = (named_cols && l.col_stride > 1) || (named_rows && l.row_stride > 1);
  if (note) l.row_stride = row_stride_for(bottom_for(true));
  l.x_title = heatmap_axis_title_fit(axes.x_title, named_cols ? l.col_stride : 1, named_rows ? l.row_stride : 1, size.x,
                                     [](const std::string& s) { return ImGui::CalcTextSize(s.c_str()).x; });
  const float bottom = bottom_for(note);
  l.pmax.y = origin.y + size.y - bottom;
  if (l.pmax.y - l.pmin.y < 4.f) l.pmax.y = l.pmin.y + 4.f;
  l.rh = (l.pmax.y - l.pmin.y) / static_cast<float>(rows);
  return l;
}

void draw_separators(ImDrawList* dl, const HeatmapLayout& l, const HeatmapAxes& axes) {
  for (int c : axes.col_separators) {
    if (c <= 0 || c >= l.cols) continue;
    const float x = std::round(l.pmin.x + l.cw * static_cast<float>(c));
    dl->AddLine(ImVec2(x, l.pmin.y), ImVec2(x, l.pmax.y), kSeparator, 1.5f);
  }
  for (int r : axes.row_separators) {
    if (r <= 0 || r >= l.rows) continue;
    const float y = std::round(l.pmin.y + l.rh * static_cast<float>(r));
    dl->AddLine(ImVec2(l.pmin.x, y), ImVec2(l.pmax.x, y), kSeparator, 1.5f);
  }
}

// Row group captions in a margin left of the row labels, centred on their span with a
// bracket line beside them; clipped to the span so neighbours never overlap. Column group
// captions above the map, centred on their span (place_group_labels); a caption wider than
// its span (the one-column "self") may spill into the margin beside the map, never over the
// neighbouring group's, and one that does not fit is shortened or left out.
void draw_groups(ImDrawList* dl, const HeatmapLayout& l, const HeatmapAxes& axes) {
  const ImVec2 origin = l.origin, pmin = l.pmin;
  for (size_t g = 0; g < axes.row_groups.size(); ++g) {
    const int r0 = std::max(0, axes.row_groups[g].first);
    const int r1 = g + 1 < axes.row_groups.size() ? axes.row_groups[g + 1].first : l.rows;
    if (r0 >= l.rows || r1 <= r0) continue;
    const float y0 = pmin.y + l.rh * static_cast<float>(r0), y1 = pmin.y + l.rh * static_cast<float>(r1);
    const float bx = origin.x + l.group_w - 5.f;
    dl->AddLine(ImVec2(bx, y0 + 1.f), ImVec2(bx, y1 - 1.f), kLabel, 1.f);
    const char* text = axes.row_groups[g].second.c_str();
    float y = 0.5f * (y0 + y1 - l.line_h);
    y = std::max(y0, std::min(y, y1 - l.line_h));
    dl->PushClipRect(ImVec2(origin.x, y0), ImVec2(bx - 1.f, std::max(y1, y0 + 1.f)), true);
    dl->AddText(ImVec2(origin.x + 1.f, y), kLabel, text);
    dl->PopClipRect();
  }
  std::vector<GroupSpan> spans;
  for (size_t g = 0; g < axes.col_groups.size(); ++g) {
    const int c0 = std::max(0, axes.col_groups[g].first);
    const int c1 = g + 1 < axes.col_groups.size() ? axes.col_groups[g + 1].first : l.cols;
    if (c0 >= l.cols || c1 <= c0) continue;
    GroupSpan s;
    s.x0 = pmin.x + l.cw * static_cast<float>(c0);
    s.x1 = pmin.x + l.cw * static_cast<float>(c1);
    s.lo = g == 0 ? origin.x : s.x0;
    s.hi = g + 1 == axes.col_groups.size() ? origin.x + l.size.x : s.x1;
    s.text = axes.col_groups[g].second;
    spans.push_back(std::move(s));
  }
  // A space's width between neighbouring captions (as between column labels).
  const float gap = std::max(3.f, ImGui::CalcTextSize(" ").x);
  for (const GroupLabel& g :
       place_group_labels(spans, [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; }, gap))
    dl->AddText(ImVec2(g.x, origin.y + 1.f), kLabel, g.text.c_str());
  if (!axes.y_title.empty() && axes.col_groups.empty())
    dl->AddText(ImVec2(origin.x + 1.f, origin.y + 1.f), kLabel, axes.y_title.c_str());
}

// Row labels, right-aligned, thinned to a nice stride; column labels below, centred under
// their cells (the first and last columns, e.g. "self" and "<cls>", and the highlighted one
// always get theirs; the others are thinned to a stride that fits the widest of them); the x
// title under them.
void draw_axis_labels(ImDrawList* dl, const HeatmapLayout& l, const HeatmapAxes& axes) {
  const ImVec2 origin = l.origin, pmin = l.pmin, pmax = l.pmax;
  if (l.row_labels) {
    auto draw_row_label = [&](int r, ImU32 col) {
      const std::string s = label_of(axes.row_labels, axes.row_label_offset, r);
      const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
      dl->AddText(ImVec2(pmin.x - 4.f - ts.x, pmin.y + l.rh * (static_cast<float>(r) + 0.5f) - 0.5f * ts.y), col, s.c_str());
    };
    const int hr = axes.highlight_row;
    const float min_gap = l.line_h;
    for (int r = 0; r < l.rows; r += l.row_stride) {
      if (hr >= 0 && hr < l.rows && std::fabs(static_cast<float>(r - hr) * l.rh) < min_gap && r != hr) continue;
      draw_row_label(r, kLabel);
    }
    if (hr >= 0 && hr < l.rows) draw_row_label(hr, kHighlight);
  }
  if (l.col_labels) {
    const int hc = axes.highlight_col;
    // Priority: the highlighted column, the ones the caller names (a segment's first and last
    // token), then the first and last columns ("self", "<cls>"), then every stride-th one.
    const std::vector<int> priority = col_label_priority(axes, l.cols);
    auto width = [&](int c) { return ImGui::CalcTextSize(label_of(axes.col_labels, axes.col_label_offset, c).c_str()).x; };
    // A gap of a space's width (scales with the UI) between neighbouring labels.
    const float gap = std::max(3.f, ImGui::CalcTextSize(" ").x);
    for (const ColLabel& c :
         place_col_labels(l.cols, width, pmin.x, l.cw, origin.x, origin.x + l.size.x, priority, l.col_stride, gap))
      dl->AddText(ImVec2(c.x, pmax.y + 2.f), c.col == hc ? kHighlight : kLabel,
                  label_of(axes.col_labels, axes.col_label_offset, c.col).c_str());
  }
  if (!l.x_title.empty()) {
    const float tw = ImGui::CalcTextSize(l.x_title.c_str()).x;
    // Centred under the map, kept inside the widget (clipped at its right edge when longer).
    const float x = std::max(origin.x, std::min(0.5f * (pmin.x + pmax.x - tw), origin.x + l.size.x - tw));
    dl->PushClipRect(origin, ImVec2(origin.x + l.size.x, origin.y + l.size.y), true);
    dl->AddText(ImVec2(x, origin.y + l.size.y - l.line_h - 1.f), kLabel, l.x_title.c_str());
    dl->PopClipRect();
  }
}

// Highlights: an outline that stays visible even when a row is thinner than a pixel.
void draw_highlights(ImDrawList* dl, const HeatmapLayout& l, const HeatmapAxes& axes) {
  const ImVec2 pmin = l.pmin, pmax = l.pmax;
  if (axes.highlight_row >= 0 && axes.highlight_row < l.rows) {
    float y0 = pmin.y + l.rh * static_cast<float>(axes.highlight_row), y1 = y0 + l.rh;
    if (y1 - y0 < 3.f) {
      const float c = 0.5f * (y0 + y1);
      y0 = c - 1.5f;
      y1 = c + 1.5f;
    }
    const float lw = std::max(1.f, ImGui::GetFontSize() / 15.f);  // heavier with the UI scale
    dl->AddRect(ImVec2(pmin.x - 1, y0 - 1), ImVec2(pmax.x + 1, y1 + 1), IM_COL32(0, 0, 0, 255), 0.f, 0, 3.f * lw);
    dl->AddRect(ImVec2(pmin.x - 1, y0 - 1), ImVec2(pmax.x + 1, y1 + 1), kHighlight, 0.f, 0, 1.5f * lw);
  }
  if (axes.highlight_col >= 0 && axes.highlight_col < l.cols) {
    float x0 = pmin.x + l.cw * static_cast<float>(axes.highlight_col), x1 = x0 + l.cw;
    if (x1 - x0 < 3.f) {
      const float c = 0.5f * (x0 + x1);
      x0 = c - 1.5f;
      x1 = c + 1.5f;
    }
    dl->AddRect(ImVec2(x0 - 1, pmin.y - 1), ImVec2(x1 + 1, pmax.y + 1), IM_COL32(0, 0, 0, 255), 0.f, 0, 3.f);
    dl->AddRect(ImVec2(x0 - 1, pmin.y - 1), ImVec2(x1 + 1, pmax.y + 1), IM_COL32(255, 255, 255, 255), 0.f, 0, 1.5f);
  }
}

// Colorbar with nice ticks, and its label over it.
void draw_colorbar(ImDrawList* dl, const HeatmapLayout& l, const HeatmapAxes& axes) {
  const ImVec2 pmin = l.pmin, pmax = l.pmax;
  const float line_h = l.line_h;
  const Texture& bar = axes.colorbar->texture(axes.cmap);
  const float bx0 = pmax.x + 10.f, bx1 = bx0 + 14.f;
  if (bar.valid()) dl->AddImage(bar.id(), ImVec2(bx0, pmin.y), ImVec2(bx1, pmax.y));
  dl->AddRect(ImVec2(bx0, pmin.y), ImVec2(bx1, pmax.y), IM_COL32(120, 120, 120, 255));
  const double lo = axes.vmin, hi = axes.vmax;
  if (std::isfinite(lo) && std::isfinite(hi) && hi > lo) {
    const int max_ticks = std::max(2, static_cast<int>((pmax.y - pmin.y) / (line_h * 2.2f)));
    auto ticks = viz::nice_ticks(lo, hi, max_ticks);
    const double step = viz::tick_step(ticks, lo, hi);
    for (double v : ticks) {
      const float y = pmax.y - static_cast<float>((v - lo) / (hi - lo)) * (pmax.y - pmin.y);
      dl->AddLine(ImVec2(bx1, y), ImVec2(bx1 + 4.f, y), kLabel);
      const std::string s = viz::format_tick(v, step);
      dl->AddText(ImVec2(bx1 + 6.f, y - 0.5f * line_h), kLabel, s.c_str());
    }
  }
  if (!axes.colorbar_label.empty()) {
    const float tw = ImGui::CalcTextSize(axes.colorbar_label.c_str()).x;
    dl->AddText(ImVec2(std::max(pmax.x - tw + l.right, pmin.x), l.origin.y + 1.f), kLabel, axes.colorbar_label.c_str());
  }
}

}  // namespace

HeatmapHit draw_heatmap(const char* id, const HeatmapImage& image, ImVec2 size, const HeatmapAxes& axes) {
  HeatmapHit hit;
  size.x = std::max(size.x, 8.f);
  size.y = std::max(size.y, 8.f);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const bool pressed = ImGui::InvisibleButton(id, size);
  const bool item_hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int rows = image.rows(), cols = image.cols();
  if (image.empty()) {
    dl->AddText(ImVec2(origin.x + 4, origin.y + 4), kLabel, "(no data)");
    return hit;
  }
  const HeatmapLayout l = layout_heatmap(axes, origin, size, rows, cols);
  hit.plot_min = l.pmin;
  hit.plot_max = l.pmax;
  dl->AddImage(image.texture().id(), l.pmin, l.pmax);
  draw_separators(dl, l, axes);
  draw_groups(dl, l, axes);
  draw_axis_labels(dl, l, axes);
  draw_highlights(dl, l, axes);
  if (axes.colorbar) draw_colorbar(dl, l, axes);

  // Hover and click.
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (item_hovered && m.x >= l.pmin.x && m.x < l.pmax.x && m.y >= l.pmin.y && m.y < l.pmax.y) {
    hit.hovered = true;
    hit.col = std::min(cols - 1, std::max(0, static_cast<int>((m.x - l.pmin.x) / l.cw)));
    hit.row = std::min(rows - 1, std::max(0, static_cast<int>((m.y - l.pmin.y) / l.rh)));
    hit.clicked = pressed;
  }
  return hit;
}

}  // namespace mnemo::app::ui
