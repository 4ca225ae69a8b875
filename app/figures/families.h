// The app's side of each model family (core/models/family.h): how its steps reach the screen.
// One entry per core family: which panels draw it, the title of its attention map, the trace
// keys its views need and its extractor (its part of StepData, app/figures/extract.h). The
// panel registry (app/gui/panels/registry.cpp), the trace keys the app asks for
// (app/view/trace_keys.cpp) and make_step_data ask the entry instead of naming kinds.
// Plain C++: the panels include it without LibTorch.
#pragma once
#include "core/models/capabilities.h"

#include <string>
#include <vector>

namespace mnemo {
struct Snapshot;
struct Document;
}  // namespace mnemo

namespace mnemo::app {

struct StepData;

// Which panels draw the model's step: Memformer's writer panels or the attention panel.
enum class PanelFamily { kMemformer, kAttention };

// Fills the family's arrays of a step's StepData from its trace (keys missing leave them
// empty); `model` is the config's kind. Defined in app/figures/extract.cpp (LibTorch).
using StepExtractor = void (*)(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model_kind);

struct ViewFamily {
  std::string family;  // the core family's name (core/models/family.h ModelFamily::name)
  PanelFamily panels = PanelFamily::kAttention;
  // The title of a kind's RMT attention map (rmt.attn.*); null for a family without one.
  const char* (*map_title)(const ModelCapabilities& caps) = nullptr;
  // The trace keys (patterns) its panels draw and export, beside the ones every view needs;
  // the app steps with all of them (gui_trace_keys(), app/view/trace_keys.h).
  std::vector<std::string> view_keys;
  StepExtractor extract = nullptr;
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
