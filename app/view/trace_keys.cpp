#include "app/view/trace_keys.h"

#include "app/figures/families.h"
#include "core/trace/keys.h"

namespace mnemo::app {

// What the panels draw (and export): every view's tokens and losses, each family's keys (its
// entry in app/figures/families.cpp: Memformer's writer, memory read and memory, the attention
// maps of the RMT / Transformer-XL / MTN families with RMT block masses, the MTN memory), and
// every hashed projection's buckets. A model traces only the keys it has.
std::vector<std::string> gui_trace_keys() {
  // Not input.offsets nor memformer.slot_type: nothing in app/ reads them (the panels take the
  // slot types from the writer's self mass, app/figures/extract.cpp).
  std::vector<std::string> k = {keys::kInputTokens, keys::kLmLoss};
  for (const ViewFamily& f : view_families()) k.insert(k.end(), f.view_keys.begin(), f.view_keys.end());
  k.push_back(std::string(keys::kHashPrefix) + "*");
  return k;
}

}  // namespace mnemo::app
