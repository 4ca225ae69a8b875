// Hash buckets: one MemoryFormer projection (chosen by layer and projection) at the shown
// step. A heat strip of every table's bucket loads (lookups / uniform load: blue = dead,
// white = uniform, red = crowded), the selected table's loads as bars against the uniform
// line, the distribution of p(z), and the stats table (normalised entropy, dead-bucket
// fraction, max / mean load) of every table.
#include "app/gui/panels/panels.h"

#include "app/figures/figures.h"
#include "app/figures/hash.h"
#include "app/figures/palette.h"

#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace mnemo::app {

namespace {

// Bars of n values in `size` (y from 0 to the max, or to `ref` * 2 when larger), an optional
// dashed reference line, and the hovered bar's index in *hovered (-1 none). More values than
// pixels are averaged per pixel column (so the reference line still reads as "uniform").
void bar_chart(const char* id, const float* v, int n, float ref, ImVec2 size, ImU32 color, const char* x_lo, const char* x_mid,
               const char* x_hi, int* hovered, int* hover_hi) {
  *hovered = -1;
  *hover_hi = -1;
  size.x = std::max(size.x, 40.f);
  size.y = std::max(size.y, 30.f);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  const bool item_hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float lh = ImGui::GetTextLineHeight();
  float hi = 0.f;
  for (int i = 0; i < n; ++i)
    if (std::isfinite(v[i])) hi = std::max(hi, v[i]);
  if (std::isfinite(ref)) hi = std::max(hi, ref * 1.25f);
  if (!(hi > 0.f)) hi = 1.f;
  const std::string top = display_number(hi);
  const char* buf = top.c_str();
  const float left = ImGui::CalcTextSize(buf).x + 6.f;
  const ImVec2 pmin(o.x + left, o.y + 2.f), pmax(o.x + size.x - 2.f, o.y + size.y - lh - 2.f);
  dl->AddRectFilled(pmin, pmax, IM_COL32(255, 255, 255, 12));
  dl->AddText(ImVec2(o.x, pmin.y - 2.f), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
  dl->AddText(ImVec2(o.x + left - ImGui::CalcTextSize("0").x - 6.f, pmax.y - lh + 2.f), ImGui::GetColorU32(ImGuiCol_TextDisabled), "0");
  // x-axis: labels at both ends and a caption in the middle.
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  dl->AddText(ImVec2(pmin.x, pmax.y + 1.f), dim, x_lo);
  const float hw = ImGui::CalcTextSize(x_hi).x, mw = ImGui::CalcTextSize(x_mid).x;
  dl->AddText(ImVec2(pmax.x - hw, pmax.y + 1.f), dim, x_hi);
  if (mw + 2.f * std::max(hw, ImGui::CalcTextSize(x_lo).x) + 16.f < pmax.x - pmin.x)
    dl->AddText(ImVec2(0.5f * (pmin.x + pmax.x - mw), pmax.y + 1.f), dim, x_mid);
  if (n <= 0 || pmax.y - pmin.y < 4.f) return;
  const float pw = pmax.x - pmin.x, ph = pmax.y - pmin.y;
  const int columns = std::max(1, std::min(n, static_cast<int>(pw)));
  const float cw = pw / static_cast<float>(columns);
  for (int c = 0; c < columns; ++c) {
    const int i0 = static_cast<int>(static_cast<int64_t>(c) * n / columns);
    const int i1 = std::max(i0 + 1, static_cast<int>(static_cast<int64_t>(c + 1) * n / columns));
    double sum = 0;
    int cnt = 0;
    for (int i = i0; i < i1; ++i)
      if (std::isfinite(v[i])) {
        sum += v[i];
        ++cnt;
      }
    const float val = cnt ? static_cast<float>(sum / cnt) : 0.f;
    const float x0 = pmin.x + cw * static_cast<float>(c), x1 = x0 + std::max(1.f, cw - (cw > 4.f ? 1.f : 0.f));
    const float y0 = pmax.y - ph * std::min(1.f, val / hi);
    if (val > 0.f) dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, pmax.y), color);
  }
  if (std::isfinite(ref) && ref > 0.f) {
    const float y = std::round(pmax.y - ph * std::min(1.f, ref / hi));
    for (float x = pmin.x; x < pmax.x; x += 8.f)
      dl->AddLine(ImVec2(x, y), ImVec2(std::min(x + 5.f, pmax.x), y), IM_COL32(255, 255, 255, 230), 1.5f);
  }
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (item_hovered && m.x >= pmin.x && m.x < pmax.x) {
    const int c = std::min(columns - 1, std::max(0, static_cast<int>((m.x - pmin.x) / cw)));
    *hovered = static_cast<int>(static_cast<int64_t>(c) * n / columns);
    *hover_hi = std::max(*hovered + 1, static_cast<int>(static_cast<int64_t>(c + 1) * n / columns)) - 1;
    const float x0 = pmin.x + cw * static_cast<float>(c);
    dl->AddRect(ImVec2(x0 - 1.f, pmin.y), ImVec2(x0 + std::max(2.f, cw) + 1.f, pmax.y), IM_COL32(255, 214, 10, 255));
  }
}

// The lookups as the table below counts them: per table (each row's "lookups"), or their
// total when the tables differ (the header said the total, 256, above rows of 64).
std::string lookups_text(const HashPathData& p) {
  int64_t lookups = 0;
  bool same = true;
  for (int64_t l : p.lookups) {
    lookups += l;
    same = same && l == p.lookups.front();
  }
  char count[64];
  if (same && !p.lookups.empty()) std::snprintf(count, sizeof count, "%lld lookups a table", static_cast<long long>(p.lookups.front()));
  else std::snprintf(count, sizeof count, "%lld lookups in all", static_cast<long long>(lookups));
  return count;
}

}  // namespace

void HashBucketsPanel::draw(PanelContext& ctx) {
  strip_.set_api(&ctx.textures);
  colorbar_.set_api(&ctx.textures);
  const auto& step = ctx.view.step;
  if (!step || step->hash.empty()) {
    ImGui::TextDisabled(step ? "This step traced no hashed projection (hash.*.counts)." : "Step to a segment to see the hash buckets.");
    return;
  }
  const HashData& hd = step->hash;
  // Selectors: layer (group), then projection within it; both clamp.
  const int ng = static_cast<int>(hd.groups.size());
  group_ = std::min(std::max(0, group_), ng - 1);
  const std::string& group = hd.groups[static_cast<size_t>(group_)];
  std::vector<int> in_group;
  for (size_t i = 0; i < hd.paths.size(); ++i)
    if (hd.paths[i].group == group) in_group.push_back(static_cast<int>(i));
  projection_ = std::min(std::max(0, projection_), static_cast<int>(in_group.size()) - 1);
  float gw = 0.f;
  for (const auto& g : hd.groups) gw = std::max(gw, ImGui::CalcTextSize(g.c_str()).x);
  ImGui::SetNextItemWidth(gw + ImGui::GetFrameHeight() + 12.f);
  if (ImGui::BeginCombo("layer", group.c_str())) {
    for (int g = 0; g < ng; ++g)
      if (ImGui::Selectable(hd.groups[static_cast<size_t>(g)].c_str(), g == group_)) {
        group_ = g;
        projection_ = 0;
      }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  auto proj_name = [&](int i) {
    const HashPathData& p = hd.paths[static_cast<size_t>(i)];
    return p.projection.empty() ? p.path : p.projection;
  };
  const std::string cur = in_group.empty() ? std::string("-") : proj_name(in_group[static_cast<size_t>(projection_)]);
  float pw = 0.f;
  for (int i : in_group) pw = std::max(pw, ImGui::CalcTextSize(proj_name(i).c_str()).x);
  ImGui::SetNextItemWidth(pw + ImGui::GetFrameHeight() + 12.f);
  if (ImGui::BeginCombo("##projection", cur.c_str())) {
    for (int j = 0; j < static_cast<int>(in_group.size()); ++j)
      if (ImGui::Selectable(proj_name(in_group[static_cast<size_t>(j)]).c_str(), j == projection_)) projection_ = j;
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("projection of this layer");
  export_button(ctx, PanelId::kHashBuckets);
  if (in_group.empty()) return;
  const HashPathData& p = hd.paths[static_cast<size_t>(in_group[static_cast<size_t>(projection_)])];
  path_ = p.path;
  table_ = std::min(std::max(0, table_), p.tables - 1);

  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s: %d tables x %d buckets, %s, segment %lld", p.path.c_str(), p.tables, p.buckets,
                     lookups_text(p).c_str(), static_cast<long long>(step->segment));
  ImGui::PopStyleColor();

  if (step != last_step_ || p.path != last_path_) {
    ++key_;
    last_step_ = step;
    last_path_ = p.path;
  }
  // Tables that look alike say why (memoryformer-lm's layer 0: the buckets follow the bytes).
  if (note_key_ != key_) {
    note_key_ = key_;
    std::vector<int64_t> ids;
    if (ctx.view.info && ctx.view.info->doc && ctx.view.info->segment_len > 0) {
      const Document& doc = *ctx.view.info->doc;
      const int64_t first = step->segment * ctx.view.info->segment_len;
      const int64_t end = std::min(doc.size(), first + ctx.view.info->segment_len);
      for (int64_t t = std::max<int64_t>(0, first); t < end; ++t) ids.push_back(doc.id(t));
    }
    same_tables_note_ = hash_same_tables_note(p, ids);
  }
  if (!same_tables_note_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.84f, 0.45f, 1.f));
    ImGui::TextWrapped("%s", same_tables_note_.c_str());
    ImGui::PopStyleColor();
  }

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // Heat strip of every table: rows = tables (click one to show it below).
  strip_.update(key_, p.load.data(), p.tables, p.buckets, 0.f, 2.f, viz::Colormap::Diverging);
  ui::HeatmapAxes axes;
  axes.col_labels = nullptr;  // bucket indices, thinned
  axes.highlight_row = table_;
  axes.colorbar = &colorbar_;
  axes.cmap = viz::Colormap::Diverging;
  axes.vmin = 0.f;
  axes.vmax = 2.f;
  axes.colorbar_label = "load / uniform";
  axes.y_title = "table";
  axes.x_title = "bucket h(z)";
  const float strip_h = std::min(std::max(line * 5.f, static_cast<float>(p.tables) * 14.f + line * 3.f), avail.y * 0.34f);
  auto hit = ui::draw_heatmap("##strip", strip_, ImVec2(avail.x, std::max(line * 4.f, strip_h)), axes);
  if (hit.hovered) {
    const size_t i = static_cast<size_t>(hit.row) * static_cast<size_t>(p.buckets) + static_cast<size_t>(hit.col);
    ImGui::BeginTooltip();
    ImGui::Text("table %d, bucket %d", hit.row, hit.col);
    ImGui::Text("%.0f lookups = %.3f x uniform", p.counts[i], p.load[i]);
    ImGui::TextDisabled("click: show table %d below", hit.row);
    ImGui::EndTooltip();
    if (hit.clicked) table_ = hit.row;
  }

  // The selected table's bars and the p(z) distribution side by side.
  const float chart_h = std::max(line * 4.f, std::min(avail.y * 0.28f, line * 10.f));
  const float half = std::max(80.f, (avail.x - ImGui::GetStyle().ItemSpacing.x) * 0.5f);
  ImGui::BeginGroup();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.f);
  if (ImGui::InputInt("table", &table_)) table_ = std::min(std::max(0, table_), p.tables - 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the table drawn below (also: click a row of the strip or of the stats)");
  ImGui::SameLine();
  const float uniform = p.lookups.empty() ? 0.f : static_cast<float>(p.lookups[static_cast<size_t>(table_)]) / static_cast<float>(p.buckets);
  ImGui::TextDisabled("- - uniform %.2f", uniform);
  int hb = -1, hb_hi = -1;
  const std::string last_bucket = std::to_string(p.buckets - 1);
  bar_chart("##table", p.counts.data() + static_cast<size_t>(table_) * static_cast<size_t>(p.buckets), p.buckets, uniform,
            ImVec2(half, chart_h), IM_COL32(90, 160, 220, 255), "0", "bucket", last_bucket.c_str(), &hb, &hb_hi);
  if (hb >= 0) {
    const float* row = p.counts.data() + static_cast<size_t>(table_) * static_cast<size_t>(p.buckets);
    if (hb_hi > hb) {
      double s = 0;
      for (int b = hb; b <= hb_hi; ++b) s += row[b];
      ImGui::SetTooltip("table %d, buckets %d..%d: %.1f lookups each on average (uniform %.2f)", table_, hb, hb_hi,
                        s / (hb_hi - hb + 1), uniform);
    } else {
      ImGui::SetTooltip("table %d, bucket %d: %.0f lookups (uniform %.2f)", table_, hb, row[hb], uniform);
    }
  }
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  if (p.p_hist.empty()) {
    ImGui::TextDisabled("p(z) was not traced");
  } else {
    ImGui::Text("p(z)");
    ImGui::SameLine();
    // "all tables, " goes where the half column cannot hold it (1280x720); the tooltip says it.
    char mean[64];
    std::snprintf(mean, sizeof mean, "all tables, mean %.3f", p.p_mean);
    if (ImGui::CalcTextSize("p(z)").x + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(mean).x > half)
      std::snprintf(mean, sizeof mean, "mean %.3f", p.p_mean);
    ImGui::TextDisabled("%s", mean);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("all tables: %lld values (tokens x tables), mean %.4f", static_cast<long long>(p.p_count), p.p_mean);
    bar_chart("##p", p.p_hist.data(), static_cast<int>(p.p_hist.size()), NAN, ImVec2(half, chart_h), ui::im_color(palette::mass(2)),
              "0", "p(z)", "1", &hb, &hb_hi);
    if (hb >= 0) {
      const float w = 1.f / static_cast<float>(p.p_hist.size());
      ImGui::SetTooltip("p(z) in [%.3f, %.3f): %.0f values\np(z) = prod_i 1 / (1 + exp(-2|z_i| / t))", hb * w, (hb + 1) * w,
                        p.p_hist[static_cast<size_t>(hb)]);
    }
  }
  ImGui::EndGroup();

  // Stats of every table (and their mean); click a row to show that table.
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchSame;
  const float table_h = std::max(line * 3.f, ImGui::GetContentRegionAvail().y);
  if (ImGui::BeginTable("##stats", 5, flags, ImVec2(0, table_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("table");
    ImGui::TableSetupColumn("lookups");
    ImGui::TableSetupColumn("entropy");
    ImGui::TableSetupColumn("dead");
    ImGui::TableSetupColumn("max/mean");
    ImGui::TableHeadersRow();
    auto row = [&](const char* name, const std::string& lk, double e, double dead, double mx, bool selected, int select) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (ImGui::Selectable(name, selected, ImGuiSelectableFlags_SpanAllColumns) && select >= 0) table_ = select;
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(lk.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", e);
      ImGui::TableNextColumn();
      ImGui::Text("%.1f%%", 100.0 * dead);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", mx);
    };
    // Every column of this row is a mean over the tables (lookups too: each table sees every row).
    row("mean", format_lookups(hash_mean_lookups(p)), p.mean_entropy, p.mean_dead, p.mean_max_load, false, -1);
    ImGuiListClipper clip;
    clip.Begin(p.tables);
    while (clip.Step())
      for (int k = clip.DisplayStart; k < clip.DisplayEnd; ++k) {
        const std::string name = std::to_string(k);
        const size_t i = static_cast<size_t>(k);
        row(name.c_str(), std::to_string(p.lookups[i]), p.entropy[i], p.dead_fraction[i], p.max_load[i], k == table_, k);
      }
    ImGui::EndTable();
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("entropy: -sum q log q / log(2^tau), 1 = uniform (the paper's Fig. 4 is near 1)\n"
                      "dead buckets: share of buckets no token hit at this step\n"
                      "max / mean load: the most crowded bucket over the uniform load (1 = uniform)");
}

}  // namespace mnemo::app
