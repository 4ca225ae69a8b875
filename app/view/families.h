// The app's side of each model family (core/models/family.h): how its steps reach the screen.
// One entry per core family: which panels draw it and the title of its attention map. The
// panel registry (app/gui/panels/registry.cpp) asks the entry instead of naming kinds.
// Plain C++: the panels include it without LibTorch.
#pragma once
#include "core/models/capabilities.h"

#include <string>
#include <vector>

namespace mnemo::app {

// Which panels draw the model's step: Memformer's writer panels or the attention panel.
enum class PanelFamily { kMemformer, kAttention };

struct ViewFamily {
  std::string family;  // the core family's name (core/models/family.h ModelFamily::name)
  PanelFamily panels = PanelFamily::kAttention;
  // The title of a kind's RMT attention map (rmt.attn.*); null for a family without one.
  const char* (*map_title)(const ModelCapabilities& caps) = nullptr;
};

// Every family's entry, in the order of model_families().
const std::vector<ViewFamily>& view_families();
// The entry of a model kind's family; nullptr for a kind this build does not know (a
// recording's, or "" for a hand-written session).
const ViewFamily* view_family_of(const std::string& model_kind);
// The same for a kind that must be known; throws std::invalid_argument naming the known kinds.
const ViewFamily& view_family(const std::string& model_kind);
// The title of a model's RMT attention map: its family's, "RMT" when it has none.
std::string attention_map_title(const std::string& model_kind);

}  // namespace mnemo::app
