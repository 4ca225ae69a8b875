// Heatmaps in ImGui: a matrix becomes one texture (uploaded once per change) drawn as one
// quad with row / column labels, an optional colorbar, highlights and hover hit-testing.
// Never one rectangle per cell: a 1024 x 512 map costs the same to draw as a 2 x 2 one.
#pragma once
#include "viz/colormap.h"
#include "app/gui/panels/widgets/texture.h"

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mnemo::app::ui {

// 256-entry colour table of a colormap: t in [0,1] -> packed RGBA (R in the low byte).
class ColorLut {
 public:
  explicit ColorLut(viz::Colormap map = viz::Colormap::Viridis);
  viz::Colormap map() const { return map_; }
  uint32_t at(float t) const;  // NaN -> the map's marker colour; t clamped to [0,1]
  ImU32 im_color(float t) const { return at(t); }  // ImGui's IM_COL32 byte order is the same
  // Entries 0..255 along the map, entry 256 the marker colour (for tight conversion loops).
  const uint32_t* table() const { return table_; }

 private:
  viz::Colormap map_;
  uint32_t table_[257];
  uint32_t nan_;
};

// values (rows x cols, row-major) -> RGBA pixels. When a side exceeds max_side the image is
// nearest-sampled down to max_side on that side; *w / *h receive the image size.
void heatmap_rgba(const float* values, int rows, int cols, float vmin, float vmax, const ColorLut& lut,
                  int max_side, std::vector<uint8_t>* out, int* w, int* h);

// A matrix held as one texture. update() converts and uploads only when `key` differs from
// the key of the previous upload (the caller bumps it when the data, range or map change).
class HeatmapImage {
 public:
  explicit HeatmapImage(TextureApi* api = nullptr) : tex_(api) {}
  // A different api drops the texture (it belongs to the old one); the same api is a no-op.
  void set_api(TextureApi* api) {
    if (api == tex_.api()) return;
    tex_.set_api(api);
    key_ = ~uint64_t{0};
  }
  // Returns true when it uploaded. rows or cols == 0 clears the image. The columns flagged in
  // `gap_cols` (one flag per column, when given) are painted kGapGrey whatever their values:
  // a neutral "not shown" that no colormap uses (NaN's marker colour means a bad value).
  bool update(uint64_t key, const float* values, int rows, int cols, float vmin, float vmax, viz::Colormap map,
              const std::vector<char>* gap_cols = nullptr);
  static constexpr uint8_t kGapGrey = 96;
  // The same with ready RGBA pixels (one per cell).
  bool update_rgba(uint64_t key, const uint8_t* rgba, int rows, int cols);
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool empty() const { return rows_ == 0 || cols_ == 0 || !tex_.valid(); }
  const Texture& texture() const { return tex_; }

 private:
  Texture tex_;
  uint64_t key_ = ~uint64_t{0};
  int rows_ = 0, cols_ = 0;
  std::vector<uint8_t> pixels_;
  ColorLut lut_;
};

// A vertical colour scale (one 1 x 256 texture per colormap, created on first draw).
class ColorbarImage {
 public:
  explicit ColorbarImage(TextureApi* api = nullptr) : tex_(api) {}
  void set_api(TextureApi* api) { tex_.set_api(api); }
  const Texture& texture(viz::Colormap map);

 private:
  Texture tex_;
  viz::Colormap map_ = viz::Colormap::Viridis;
  bool made_ = false;
};

// What draw_heatmap shows besides the image. Labels are optional (null -> indices, empty
// vector -> none); they are thinned to every n-th when cells are too small, but a
// highlighted row / column always gets its label.
// Which column labels fit under a map, and where (no ImGui: `width(c)` gives label c's text
// width; only the columns tried are measured). Columns
// in `priority` are tried first, in that order, then every `stride`-th column; a label is
// centred under its cell (x0 + cw * (c + 0.5)), kept within [lo, hi], and dropped when it
// would come closer than `gap` to one already placed. Returns (column, left x) pairs.
struct ColLabel {
  int col = 0;
  float x = 0.f, w = 0.f;
};
std::vector<ColLabel> place_col_labels(int cols, const std::function<float(int)>& width, float x0, float cw, float lo,
                                       float hi, const std::vector<int>& priority, int stride, float gap);

// Captions of column groups above a map (no ImGui: `width(text)` measures a text). Group g
// spans [x0, x1] and its caption may lie within [lo, hi] (its span; for the first and the last
// group also the margin beside the map). Each caption is centred on its span and kept at least
// `gap` right of the caption before it; one that does not fit is shortened with an ellipsis
// ("tok\u2026"), and left out where not even one character and the ellipsis fit, so neighbouring
// captions never touch or run together ("selfsegment tokencls" on a narrow writer map).
struct GroupSpan {
  float x0 = 0.f, x1 = 0.f, lo = 0.f, hi = 0.f;
  std::string text;
};
struct GroupLabel {
  int group = 0;  // index into the spans
  float x = 0.f, w = 0.f;
  std::string text;  // the caption, or its shortened form
};
std::vector<GroupLabel> place_group_labels(const std::vector<GroupSpan>& spans,
                                           const std::function<float(const std::string&)>& width, float gap);

struct HeatmapAxes {
  const std::vector<std::string>* row_labels = nullptr;
  const std::vector<std::string>* col_labels = nullptr;
  int row_label_offset = 0, col_label_offset = 0;  // index labels start here
  std::string x_title, y_title;
  std::vector<int> col_separators;                  // vertical lines before these columns
  std::vector<std::pair<int, std::string>> col_groups;  // (first column, caption) above the map
  std::vector<int> row_separators;                  // horizontal lines before these rows
  std::vector<std::pair<int, std::string>> row_groups;  // (first row, caption) left of the row labels
  int highlight_row = -1, highlight_col = -1;
  // Columns whose labels are placed right after the highlighted one and before the first and
  // last columns, e.g. the first and last token of a segment between "self" and "<cls>" (which
  // the column groups above name anyway): where they do not all fit, these win.
  std::vector<int> always_label_cols;
  // Colorbar right of the map when non-null.
  ColorbarImage* colorbar = nullptr;
  viz::Colormap cmap = viz::Colormap::Viridis;
  float vmin = 0.f, vmax = 1.f;
  std::string colorbar_label;
};

// The title under a map: x_title, plus what a thinned axis of named labels (tokens, not
// indices) leaves out, e.g. "key  (every 2nd column labelled; hover a cell for each)" when
// only every col_stride-th column (row_stride-th row) is labelled; x_title unchanged when
// both strides are 1.
std::string heatmap_axis_title(const std::string& x_title, int col_stride, int row_stride);
// The longest form of that title whose `width` fits max_w, so a narrow map's note is whole
// rather than cut: the full one; without "; hover a cell for each"; then the note alone,
// "labels: every 2nd col, 10th row", and "every 2nd col, 10th row". The shortest when none fits.
std::string heatmap_axis_title_fit(const std::string& x_title, int col_stride, int row_stride, float max_w,
                                   const std::function<float(const std::string&)>& width);

// The order place_col_labels tries the named columns in: the highlighted one, always_label_cols,
// then the first and the last column (the rest follow by stride).
std::vector<int> col_label_priority(const HeatmapAxes& axes, int cols);

struct HeatmapHit {
  bool hovered = false;   // the mouse is over a cell (row, col valid)
  int row = -1, col = -1;
  bool clicked = false;   // left click released on that cell this frame
  ImVec2 plot_min{}, plot_max{};
};

// Draws at the cursor, filling `size` (labels and colorbar inside it), and advances the
// layout by `size`. Call inside a window. An empty image draws a placeholder text.
HeatmapHit draw_heatmap(const char* id, const HeatmapImage& image, ImVec2 size, const HeatmapAxes& axes);

// Width the colorbar with its tick labels takes at the current font size.
float colorbar_width();

}  // namespace mnemo::app::ui
