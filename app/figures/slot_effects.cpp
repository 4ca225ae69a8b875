#include "app/figures/slot_effects.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

int SlotEffects::ablation(const std::string& name) const {
  for (size_t a = 0; a < ablations.size(); ++a)
    if (ablations[a] == name) return static_cast<int>(a);
  return -1;
}

namespace {
constexpr double kLn2d = 0.69314718055994531;
}

float SlotEffects::bits(size_t a, int64_t e, size_t k) const {
  return static_cast<float>((static_cast<double>(removed.at(a).at(static_cast<size_t>(e)).at(k)) -
                             static_cast<double>(carried.at(k))) / kLn2d);
}

double SlotEffects::entry_bits(size_t a, int64_t e) const {
  const auto& r = removed.at(a).at(static_cast<size_t>(e));
  double s = 0;
  for (size_t k = 0; k < carried.size(); ++k) s += static_cast<double>(r[k]) - static_cast<double>(carried[k]);
  return s / kLn2d;
}

double SlotEffects::all_entries_bits(size_t a) const {
  const auto& r = all_removed.at(a);
  double s = 0;
  for (size_t k = 0; k < carried.size(); ++k) s += static_cast<double>(r[k]) - static_cast<double>(carried[k]);
  return s / kLn2d;
}

double SlotEffects::sum_of_entries(size_t a) const {
  double s = 0;
  for (int64_t e = 0; e < entries(); ++e) s += entry_bits(a, e);
  return s;
}

std::vector<int64_t> SlotEffects::ranking(size_t a) const {
  std::vector<int64_t> r(static_cast<size_t>(entries()));
  std::vector<double> b(r.size());
  for (size_t e = 0; e < r.size(); ++e) {
    r[e] = static_cast<int64_t>(e);
    b[e] = entry_bits(a, static_cast<int64_t>(e));
  }
  std::stable_sort(r.begin(), r.end(), [&](int64_t x, int64_t y) { return b[static_cast<size_t>(x)] > b[static_cast<size_t>(y)]; });
  return r;
}

float SlotEffects::scale(size_t a) const {
  float m = 0.5f;
  for (int64_t e = 0; e < entries(); ++e)
    for (size_t k = 0; k < carried.size(); ++k)
      if (const float v = bits(a, e, k); std::isfinite(v)) m = std::max(m, std::fabs(v));
  return m;
}

float SlotEffects::token_bits(size_t a, int64_t e, int64_t t) const {
  const auto it = std::find(tokens.begin(), tokens.end(), t);
  if (it == tokens.end()) return NAN;
  return bits(a, e, static_cast<size_t>(it - tokens.begin()));
}

viz::HeatmapSpec slot_effects_heatmap(const SlotEffects& fx, const Document& doc, size_t a) {
  viz::HeatmapSpec s;
  if (fx.empty() || fx.tokens.empty()) return s;
  const auto order = fx.ranking(a);
  s.rows = static_cast<int>(order.size());
  s.cols = static_cast<int>(fx.tokens.size());
  s.cmap = viz::Colormap::Diverging;
  const float m = fx.scale(a);
  s.vmin = -m;
  s.vmax = m;
  char title[200];
  std::snprintf(title, sizeof title, "What each %s did for the tokens segment %lld's step predicts (%s)",
                fx.entry_kind.c_str(), static_cast<long long>(fx.segment),
                fx.ablations[a] == "reset" ? "removed = reset to the initial memory" : "removed = zeroed");
  s.title = title;
  s.x_label = "predicted token";
  s.y_label = fx.entry_kind + ", most helpful first";
  s.colorbar_label = "bits with it - without it (blue: it helped)";
  for (int64_t e : order) {
    char lab[96];
    std::snprintf(lab, sizeof lab, "%s  %+.2f", fx.labels[static_cast<size_t>(e)].c_str(), fx.entry_bits(a, e));
    s.row_labels.push_back(lab);
    for (size_t k = 0; k < fx.tokens.size(); ++k) s.values.push_back(-fx.bits(a, e, k));
  }
  for (int64_t t : fx.tokens) s.col_labels.push_back(token_text(doc, t));
  return s;
}

void write_slot_effects(const SlotEffects& fx, const Document& doc, const std::string& base, const FigureFormats& fm,
                        std::vector<std::string>& out) {
  if (fx.empty() || fx.tokens.empty()) return;
  if (fm.png || fm.svg) write_figure(viz::make_heatmap(slot_effects_heatmap(fx, doc, 0)), base, fm, out);
  if (!fm.csv) return;
  std::vector<std::string> header = {"entry", "label", "token", "byte", "nats_carried"};
  for (const auto& a : fx.ablations) {
    header.push_back("nats_" + a);
    header.push_back("bits_saved_" + a);
  }
  std::vector<std::vector<std::string>> rows;
  for (int64_t e = 0; e < fx.entries(); ++e)
    for (size_t k = 0; k < fx.tokens.size(); ++k) {
      const int64_t t = fx.tokens[k];
      std::vector<std::string> r = {std::to_string(e), fx.labels[static_cast<size_t>(e)], std::to_string(t),
                                    std::to_string(static_cast<int>(doc.id(t))), viz::csv_number(fx.carried[k])};
      for (size_t a = 0; a < fx.ablations.size(); ++a) {
        r.push_back(viz::csv_number(fx.removed[a][static_cast<size_t>(e)][k]));
        r.push_back(viz::csv_number(fx.bits(a, e, k)));
      }
      rows.push_back(std::move(r));
    }
  write_table(base + ".csv", header, rows, fm, out);
}

}  // namespace mnemo::app
