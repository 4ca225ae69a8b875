// Memory benefit, per token (docs/gui.md#memory-benefit): what the memory a step started from
// contributed to each token the step predicts — the token's loss with that memory, and with
// the memory reset to the initial memory (what the first segment of a document sees) and
// zeroed (StepData::token_losses_reset / _zeroed, computed by the Engine when asked).
#pragma once
#include "app/figures/figures.h"

#include <vector>

namespace mnemo::app {

struct TokenBenefit {
  int64_t token = 0;
  float loss = NAN, loss_reset = NAN, loss_zeroed = NAN;  // nats
  // Bits the memory saved on this token: (loss without it - loss with it) / ln 2; > 0 helped.
  float bits_vs_reset() const;
  float bits_vs_zeroed() const;
};

// One entry per token the step predicts (empty when the step has no benefit losses).
std::vector<TokenBenefit> memory_benefit(const StepData& st);
// Sum of bits_vs_reset over the step's tokens (NaN when empty): what the memory saved on
// the segment's predictions, in bits.
double segment_benefit_bits(const StepData& st);
// The largest |bits_vs_reset| of the step (the colour scale's end; at least 0.5 bits).
float benefit_scale(const std::vector<TokenBenefit>& b);
// The diverging colour of a benefit on a scale of ±scale bits: blue = helped, red = hurt,
// near-white = no difference; `pale` blends it with white for text drawn on top.
viz::Rgb benefit_color(float bits, float scale, bool pale);

// The predicted tokens as word-wrapped text, each on its benefit colour, with the scale as a
// legend and the segment's total in the subtitle.
viz::Figure memory_benefit_figure(const StepData& st, const Document& doc);
// base.{png,svg} and base.csv (token, id, text, loss_bits, loss_reset_bits, loss_zeroed_bits,
// benefit_bits, benefit_zeroed_bits). Nothing when the step has no benefit losses.
void write_memory_benefit(const StepData& st, const Document& doc, const std::string& base, const FigureFormats& fm,
                          std::vector<std::string>& out);

}  // namespace mnemo::app
