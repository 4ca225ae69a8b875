#include "app/figures/benefit.h"

#include "app/figures/doc_text.h"
#include "app/figures/palette.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

namespace {
constexpr float kLn2 = 0.69314718f;
float at(const TokenLosses& l, int64_t t) {
  return l.covers(t) ? l.values[static_cast<size_t>(t - l.first)] : NAN;
}
}  // namespace

float TokenBenefit::bits_vs_reset() const { return (loss_reset - loss) / kLn2; }
float TokenBenefit::bits_vs_zeroed() const { return (loss_zeroed - loss) / kLn2; }

std::vector<TokenBenefit> memory_benefit(const StepData& st) {
  std::vector<TokenBenefit> out;
  const TokenLosses& w = st.token_losses;
  if (w.empty() || (st.token_losses_reset.empty() && st.token_losses_zeroed.empty())) return out;
  for (size_t j = 0; j < w.values.size(); ++j) {
    const int64_t t = w.first + static_cast<int64_t>(j);
    out.push_back({t, w.values[j], at(st.token_losses_reset, t), at(st.token_losses_zeroed, t)});
  }
  return out;
}

namespace {
double total_bits(const std::vector<TokenBenefit>& b) {
  if (b.empty()) return NAN;
  double s = 0;
  for (const auto& e : b)
    if (std::isfinite(e.bits_vs_reset())) s += e.bits_vs_reset();
  return s;
}
}  // namespace

double segment_benefit_bits(const StepData& st) { return total_bits(memory_benefit(st)); }

float benefit_scale(const std::vector<TokenBenefit>& b) {
  float m = 0.5f;
  for (const auto& e : b)
    if (std::isfinite(e.bits_vs_reset())) m = std::max(m, std::fabs(e.bits_vs_reset()));
  return m;
}

viz::Rgb benefit_color(float bits, float scale, bool pale) {
  const float t = std::isfinite(bits) && scale > 0 ? std::clamp(0.5f - 0.5f * bits / scale, 0.f, 1.f) : 0.5f;
  viz::Rgb c = viz::sample(viz::Colormap::Diverging, t);
  if (!pale) return c;
  auto mix = [](uint8_t v) { return static_cast<uint8_t>(0.6f * v + 0.4f * 255.f); };
  return viz::Rgb{mix(c.r), mix(c.g), mix(c.b)};
}

viz::Figure memory_benefit_figure(const StepData& st, const Document& doc) {
  using palette::kBand;
  using palette::kInk;
  using palette::kMuted;
  const auto b = memory_benefit(st);
  viz::Figure f;
  const float size = 13, line_h = 21, max_w = 760, pad = 14;
  const float scale = benefit_scale(b);
  const double total = total_bits(b);
  const std::string title =
      "What the memory contributed to the tokens segment " + std::to_string(st.segment) + "'s step predicts" +
      (st.train_step >= 0 ? " (training step " + std::to_string(st.train_step) + ")" : std::string());
  char sub1[160], sub2[160];
  std::snprintf(sub1, sizeof sub1, "bits saved per token against the memory reset to the initial memory: %+.2f bits in all",
                total);
  std::snprintf(sub2, sizeof sub2, "blue = the memory helped, red = it hurt; grey band = the text before, for context");
  viz::put_text(f, pad, pad + 15, title, 15, kInk, viz::Anchor::Start, 0, true);
  viz::put_text(f, pad, pad + 33, sub1, 11, kMuted);
  viz::put_text(f, pad, pad + 48, sub2, 11, kMuted);
  float y = pad + 60, used_w = std::max({viz::text_width(title, 15, true), viz::text_width(sub1, 11),
                                         viz::text_width(sub2, 11)});
  if (!b.empty()) {
    const int64_t start = b.front().token, end = std::min<int64_t>(doc.size(), b.back().token + 1);
    // Context: up to one segment of the text before the first predicted token.
    const int64_t from = std::max<int64_t>(0, start - std::max<int64_t>(1, st.segment_len));
    for (const auto& line : token_lines(doc, from, end, size, max_w)) {
      const auto [text, xs] = line_text(doc, line, pad, size);
      used_w = std::max(used_w, xs.back() - pad);
      for (size_t i = 0; i < line.size(); ++i) {
        const float w = std::max(xs[i + 1] - xs[i], 4.f);
        if (line[i] < start) {
          viz::put_rect(f, xs[i], y + 2, w, line_h - 4, kBand);
          continue;
        }
        if (line[i] == start) viz::put_line(f, xs[i], y + 1, xs[i], y + line_h - 1, kMuted, 1.f);
        const auto& e = b[static_cast<size_t>(line[i] - start)];
        viz::put_rect(f, xs[i], y + 2, w, line_h - 4, benefit_color(e.bits_vs_reset(), scale, true));
      }
      viz::put_text(f, pad, y + 15, text, size, kInk);
      y += line_h;
    }
  }
  // Legend: the scale from +scale (helped) to -scale (hurt).
  const float lx = pad + used_w + 24;
  float ly = pad + 60;
  viz::put_text(f, lx, ly + 12, "bits saved", 12, kInk, viz::Anchor::Start, 0, true);
  ly += 20;
  for (int k = 4; k >= -4; --k) {
    const float v = scale * static_cast<float>(k) / 4.f;
    viz::put_rect(f, lx, ly, 14, 14, benefit_color(v, scale, true), kMuted, 0.5f);
    char lab[32];
    std::snprintf(lab, sizeof lab, "%+.2f", v);
    viz::put_text(f, lx + 20, ly + 11, lab, 11, kInk);
    ly += 18;
  }
  f.width = std::ceil(lx + 80 + pad);
  f.height = std::ceil(std::max(y, ly) + pad);
  return f;
}

void write_memory_benefit(const StepData& st, const Document& doc, const std::string& base, const FigureFormats& fm,
                          std::vector<std::string>& out) {
  const auto b = memory_benefit(st);
  if (b.empty()) return;
  write_figure(memory_benefit_figure(st, doc), base, fm, out);
  auto bits = [](float nats) { return viz::csv_number(nats / kLn2); };
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : b)
    rows.push_back({std::to_string(e.token), std::to_string(doc.id(e.token)), token_text(doc, e.token), bits(e.loss),
                    bits(e.loss_reset), bits(e.loss_zeroed), viz::csv_number(e.bits_vs_reset()), viz::csv_number(e.bits_vs_zeroed())});
  write_table(base + ".csv",
              {"token", "id", "text", "loss_bits", "loss_reset_bits", "loss_zeroed_bits", "benefit_bits",
               "benefit_zeroed_bits"},
              rows, fm, out);
}

}  // namespace mnemo::app
