// Tour claims checked against what the app shows (docs/formats.md#tours): each stop's
// "checks" measured on the PublishedView the worker publishes at that stop — the same values
// the panels draw — so a caption says only what its checks verify. `mnemoscope tour FILE
// --check` runs them; ctest runs it on every shipped tour. Plain C++ (no LibTorch, no ImGui).
#pragma once
#include "app/view/published_view.h"
#include "app/gui/model/tour.h"

#include <functional>
#include <string>
#include <vector>

namespace mnemo::app {

struct CheckResult {
  const TourCheck* check = nullptr;
  bool pass = false;
  std::string measured;  // "0.9998 (slot 5, the smallest)", or why it could not be measured
};

// Whether `s` shows the stop's model (checkpoint), document and segmentation: playing a stop
// opens them only when not (app/gui/shell/tour.cpp, `tour --check`).
bool view_shows_stop(const TourStop& stop, const PublishedView& s);

// A slot_effect check's values computed apart from the worker's slot effects (which the tint
// and the Slot effects panel draw): the bits each of the check's tokens costs more with entry
// c.slot removed, NaN where nothing predicts a token (tour --check passes
// app/gui/model/entry_effect.h entry_effect_apart). Throws naming the problem.
using EntryEffectApart = std::function<std::vector<double>(const TourStop&, const TourCheck&)>;

// Measures every check of `stop` on `s` (the stop's step shown: s.step->segment == stop.segment).
// A slot_effect check passes only when `apart` (given) agrees with what `s` shows.
std::vector<CheckResult> check_stop(const TourStop& stop, const PublishedView& s, const EntryEffectApart& apart = nullptr);

// "[pass] self_mass 0.9997..0.9999 in [0.9997, 1] - says 'self mass 0.9997 and more'".
std::string describe_result(const CheckResult& r);

}  // namespace mnemo::app
