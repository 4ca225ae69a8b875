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
  h.compare = b != nullptr;
  return h;
}

namespace {
// Side by side (docs/gui.md#side-by-side): the Document holds a column per side, so it gets a
// strip of its own along the bottom 40 %, beside Controls, as wide as the Memformer block on
// the right leaves; the maps stand in one row across the top 60 %, each as tall as that. The
// Slot timeline joins the row where that leaves at most three in it; the Memformer block keeps
// the right of the window at full height: Slot types, Forgetting and Memory in a column (28 %),
// or, with the timeline, two columns (32 %): Slot types over Forgetting, Memory over Slot timeline.
PanelRect compare_panel_rect(PanelId id, ImVec2 p, ImVec2 s, LayoutHint hint) {
  hint.compare = false;
  if (!panel_def(id).open_by_default) return default_panel_rect(id, p, s, hint);  // floating panels
  const bool attention = !hint.memformer || hint.attention;
  const bool others[] = {hint.memformer, attention, hint.mtn, hint.hashed};
  const int n_others = others[0] + others[1] + others[2] + others[3];
  const bool timeline_in_row = hint.memformer && n_others < 3;
  const bool two_columns = hint.memformer && !timeline_in_row;
  const float top = std::round(s.y * 0.6f);
  const float right_w = hint.memformer ? std::round(s.x * (two_columns ? 0.32f : 0.28f)) : 0.f;  // the Memformer block
  const float row_w = s.x - right_w;  // the top row and the bottom strip
  const float controls_w = std::round(s.x * (two_columns ? 0.18f : 0.2f));
  auto at = [&](float x, float y, float w, float h) { return PanelRect{ImVec2(p.x + x, p.y + y), ImVec2(w, h)}; };
  if (id == PanelId::kControls) return at(0, top, controls_w, s.y - top);
  if (id == PanelId::kDocument) return at(controls_w, top, row_w - controls_w, s.y - top);
  // The top row, left to right: Writer attention, Attention, MTN memory, Hash buckets (those
  // shown) and the Slot timeline when it joins them.
  const PanelId row[] = {PanelId::kWriterAttention, PanelId::kAttention, PanelId::kMtnMemory, PanelId::kHashBuckets,
                         PanelId::kTimeline};
  const bool in_row[] = {others[0], others[1], others[2], others[3], timeline_in_row};
  // Widths by weight: the timeline (a few visited segments) 3/4 of a map's share, so the
  // attention maps (A, B and A - B side by side in one panel) get the rest.
  float total = 0.f, before = 0.f, mine = 0.f;
  bool last = false;
  for (int i = 0; i < 5; ++i) {
    if (!in_row[i]) continue;
    const float weight = row[i] == PanelId::kTimeline ? 0.75f : 1.f;
    if (row[i] == id) {
      mine = weight;
      before = total;
      last = true;
    } else if (mine > 0.f) {
      last = false;
    }
    total += weight;
  }
  if (mine > 0.f) {
    const float x = std::floor(row_w * before / total);
    return at(x, 0, last ? row_w - x : std::floor(row_w * (before + mine) / total) - x, top);
  }
  // The Memformer block.
  const PanelId block[] = {PanelId::kSlotTypes, PanelId::kForgetting, PanelId::kMemory, PanelId::kTimeline};
  for (int i = 0; i < 4; ++i) {
    if (block[i] != id) continue;
    if (two_columns) {
      const float half = std::floor(right_w * 0.5f), mid = std::round(s.y * (i < 2 ? 0.45f : 0.5f));
      const float x = row_w + (i < 2 ? 0.f : half), w = i < 2 ? half : right_w - half;
      return i % 2 == 0 ? at(x, 0, w, mid) : at(x, mid, w, s.y - mid);
    }
    const float edges[] = {0.f, 0.3f, 0.52f, 1.f, 1.f};  // (the timeline is in the row here)
    const float y0 = std::round(s.y * edges[i]), y1 = std::round(s.y * edges[i + 1]);
    return at(row_w, y0, right_w, y1 - y0);
  }
  return default_panel_rect(id, p, s, hint);
}
}  // namespace

PanelRect default_panel_rect(PanelId id, ImVec2 p, ImVec2 s, LayoutHint hint) {
  if (hint.dashboard) {
    // The dashboard across the bottom 46%; the model's panels tile the rest as usual.
    const float top = std::round(s.y * 0.54f);
    if (id == PanelId::kDashboard) return PanelRect{ImVec2(p.x, p.y + top), ImVec2(s.x, s.y - top)};
    hint.dashboard = false;
    return default_panel_rect(id, p, ImVec2(s.x, top), hint);
  }
  if (hint.compare) return compare_panel_rect(id, p, s, hint);
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
