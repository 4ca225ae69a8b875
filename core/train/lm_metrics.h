// Language-modelling metrics on held-out data: bits per token and perplexity from a sum of
// per-token cross-entropies in nats (pure functions) and a running total over rollouts.
//   bits per token = nats_sum / count / ln 2      (MNIST: bits per pixel)
//   perplexity     = exp(nats_sum / count)        (= 2^bits_per_token)
#pragma once
#include "core/train/rollout.h"

namespace mnemo {

// NaN when count <= 0 (no predicted tokens); NaN/Inf in nats_sum propagate.
double bits_per_token(double nats_sum, double count);
double perplexity(double nats_sum, double count);

// Sums loss_sum / loss_count (nats, tokens) over rollouts, e.g. forward-only rollouts
// (RolloutOptions::backward = false) over a held-out split.
struct LmTotals {
  double nats_sum = 0;
  double count = 0;
  void add(const RolloutResult& r) {
    nats_sum += r.loss_sum;
    count += r.loss_count;
  }
  double nats_per_token() const { return count > 0 ? nats_sum / count : mnemo::bits_per_token(0, 0); }
  double bits_per_token() const { return mnemo::bits_per_token(nats_sum, count); }
  double perplexity() const { return mnemo::perplexity(nats_sum, count); }
};

}  // namespace mnemo
