#include "app/gui/shell/layout.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

LayoutHint layout_hint(const PublishedView& s, const PublishedView* b) {
  // Side by side: the families of the models loaded so far (a view without a model says
  // nothing; the Memformer panels "apply" to it only as the empty app's default).
  const bool use_s = s.info || !b || !b->info, use_b = b && b->info;
  auto any = [&](PanelId id) { return (use_s && panel_applies(id, s)) || (use_b && panel_applies(id, *b)); };
  LayoutHint h;
  h.memformer = any(PanelId::kWriterAttention);
  h.hashed = any(PanelId::kHashBuckets);
  h.mtn = any(PanelId::kMtnMemory);
  h.attention = h.memformer && any(PanelId::kAttention);
  return h;
}

PanelRect default_panel_rect(PanelId id, ImVec2 p, ImVec2 s, LayoutHint hint) {
  if (hint.dashboard) {
    // The dashboard across the bottom 46%; the model's panels tile the rest as usual.
    const float top = std::round(s.y * 0.54f);
    if (id == PanelId::kDashboard) return PanelRect{ImVec2(p.x, p.y + top), ImVec2(s.x, s.y - top)};
    hint.dashboard = false;
    return default_panel_rect(id, p, ImVec2(s.x, top), hint);
  }
  LayoutGrid g;
  g.p = p;
  g.s = s;
  g.hint = hint;
  g.left = std::round(s.x * 0.26f);
  g.mid = std::round(s.x * 0.46f);
  g.right = s.x - g.left - g.mid;
  g.controls_h = std::round(std::max(s.y * 0.42f, std::min(s.y * 0.6f, 380.f)));
  g.writer_h = std::round(s.y * 0.56f);
  g.types_h = std::round(s.y * 0.31f);
  g.forget_h = std::round(s.y * 0.25f);
  return panel_def(id).place(g);
}

namespace {
float caption_height(ImVec2 s, float wanted) {
  const float base = std::max(150.f, s.y * 0.24f);
  return std::round(std::min(s.y * 0.5f, std::max(base, wanted)));
}

// `count` panels tiled in the rectangle (p, s): one row up to three, else two.
PanelRect tile(int index, int count, ImVec2 p, ImVec2 s) {
  count = std::max(1, count);
  index = std::max(0, std::min(index, count - 1));
  const int rows = count <= 3 ? 1 : 2;
  const int per_row = (count + rows - 1) / rows;
  const int row = index / per_row, col = index % per_row;
  const int in_row = row + 1 < rows ? per_row : count - per_row * (rows - 1);
  const float w = std::floor(s.x / static_cast<float>(in_row)), rh = std::floor(s.y / static_cast<float>(rows));
  return PanelRect{ImVec2(p.x + w * static_cast<float>(col), p.y + rh * static_cast<float>(row)),
                   ImVec2(col + 1 == in_row ? s.x - w * static_cast<float>(col) : w,
                          row + 1 == rows ? s.y - rh * static_cast<float>(row) : rh)};
}
}  // namespace

PanelRect tour_caption_rect(ImVec2 p, ImVec2 s, float caption_wanted) {
  const float h = caption_height(s, caption_wanted);
  return PanelRect{ImVec2(p.x, p.y + s.y - h), ImVec2(s.x, h)};
}

PanelRect tour_panel_rect(int index, int count, ImVec2 p, ImVec2 s, const TourLayout& how) {
  const ImVec2 area(s.x, s.y - caption_height(s, how.caption_wanted));
  count = std::max(1, count);
  index = std::max(0, std::min(index, count - 1));
  const int doc = how.document_index;
  if (count > 1 && doc >= 0 && doc < count && how.document_wanted > 0.f) {
    const PanelRect tiled = tile(doc, count, p, area);
    const float strip = std::round(std::max(90.f, how.document_wanted));
    if (strip < 0.5f * tiled.size.y) {
      if (index == doc) return PanelRect{p, ImVec2(area.x, strip)};
      const int k = index < doc ? index : index - 1;
      return tile(k, count - 1, ImVec2(p.x, p.y + strip), ImVec2(area.x, area.y - strip));
    }
  }
  return tile(index, count, p, area);
}

PanelRect rescale_rect(const PanelRect& r, ImVec2 old_d, ImVec2 new_d, ImVec2 work_pos) {
  if (old_d.x <= 0 || old_d.y <= 0 || new_d.x <= 0 || new_d.y <= 0) return r;
  const float sx = new_d.x / old_d.x, sy = new_d.y / old_d.y;
  PanelRect o;
  o.size = ImVec2(std::max(80.f, r.size.x * sx), std::max(60.f, r.size.y * sy));
  o.pos = ImVec2(r.pos.x * sx, work_pos.y + (r.pos.y - work_pos.y) * sy);
  o.size.x = std::min(o.size.x, new_d.x);
  o.size.y = std::min(o.size.y, new_d.y - work_pos.y);
  o.pos.x = std::min(std::max(0.f, o.pos.x), new_d.x - o.size.x);
  o.pos.y = std::min(std::max(work_pos.y, o.pos.y), new_d.y - o.size.y);
  return o;
}

}  // namespace mnemo::app
