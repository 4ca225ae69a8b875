// The trace keys (patterns) the app asks the engine for: what the panels draw and export. The
// worker steps with them, and so does `mnemoscope html` (its page shows the app's numbers); in
// every build, GUI or not.
#pragma once
#include <string>
#include <vector>

namespace mnemo::app {

std::vector<std::string> gui_trace_keys();

}  // namespace mnemo::app
