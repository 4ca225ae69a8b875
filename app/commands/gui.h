// The desktop app from the command line (only in builds with the app, MNEMO_WITH_GUI).
#pragma once
#include "app/cli/flags.h"
#include "app/gui/app.h"

#include <ostream>
#include <string>

namespace mnemo::app {

// The demo's window: the sample document with the demo config. Returns -1 (and *why) when
// there is no display, so the caller can fall back to the headless step.
int run_demo_gui(std::ostream& out, std::string* why);

// The demo's window options: the zoo's demo model on its episode, stepped to segment 1 with
// slot 0 selected (the README's first screenshot), or, without the zoo, a randomly initialised
// Memformer on the sample document stepped once. Says which on `out`.
GuiOptions demo_gui_options(std::ostream& out);

}  // namespace mnemo::app
