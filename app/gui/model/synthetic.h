// Synthetic sessions: what a stepped Memformer would publish, generated without a model.
// They feed the gallery (living documentation), the null-backend test and `bench ui`.
#pragma once
#include "app/view/published_view.h"

#include <cstdint>

namespace mnemo::app {

struct SyntheticSpec {
  int slots = 16;
  int tokens = 32;    // segment length L
  int heads = 4;
  int dim = 32;
  int visited = 8;    // segments visited so far (>= 1); the last one is shown
  int n_cls = 1;
  uint64_t seed = 1;
  // Also RMT attention and block masses, hashed-projection buckets and an MTN memory (memory
  // of at most 32 entries), for the gallery's Attention, Hash buckets and MTN memory panels.
  bool other_models = false;
};

// Deterministic for a spec. The writer attention mixes retaining, mixing and overwriting
// slots; memory, forgetting norms and losses are random but plausible. The shown step goes
// through publish_step like a real one (other_models: with the other models' traces too). Throws std::invalid_argument for sizes < 1.
ViewPtr make_synthetic_view(const SyntheticSpec& spec);

}  // namespace mnemo::app
