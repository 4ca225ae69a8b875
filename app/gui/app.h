// The desktop app's entry points: the GLFW + OpenGL 3 window around the Shell, the
// worker thread, screenshots for tests and docs, and `bench ui`.
#pragma once
#include "core/models/config.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace mnemo::app {

struct GuiOptions {
  std::string doc;           // document path (checked before the window opens)
  ModelConfig cfg;           // validated model config
  uint64_t seed = 0;
  std::string checkpoint;
  int steps = 0;             // step this many segments at start
  std::string screenshot;    // PNG of the window once the steps are shown
  bool quit = false;         // quit once the steps (and screenshot) are done
  int width = 0, height = 0; // window size; 0 = fit the monitor (at most 1920x1080)
  bool gallery = false;      // open the gallery window
  int gallery_size = -1;     // gallery's synthetic size index
  int select_slot = -1;      // select this slot once the first step arrives
  float mouse_x = -1, mouse_y = -1;  // a synthetic mouse position (screenshots with a tooltip)
  std::string export_dir;    // once the steps are shown: export every panel there (as File > Export all)
  bool persist = true;       // read and write imgui.ini and recent files in the config dir
  std::string session;       // replay / follow this training session (no model; doc and cfg unused)
  std::string compare;       // overlay this second session's curves on the dashboard
};

// Whether a window can be opened: $DISPLAY or $WAYLAND_DISPLAY is set and glfwInit works.
// *why says what is missing otherwise.
bool display_available(std::string* why);

// Runs the app until the window closes (or --quit). Returns the exit code: 0, or 1 when
// the window or GL context cannot be created or a --quit run met a problem.
int run_gui(const GuiOptions& o, std::ostream& log);

struct BenchUiOptions {
  int frames = 600;
  int slots = 1024;
  int tokens = 512;
  int segments = 256;
  int change_every = 30;  // frames between new steps (every texture re-uploaded)
  int64_t dashboard_points = 0;  // > 0: `bench dashboard`: the training dashboard with four
                                 // curves of this many points over the live maps (no gallery)
};
// Renders o.frames frames with every panel open on synthetic traces and prints p50 / p99
// frame times of the UI work (model compute excluded). Needs a display (e.g. xvfb-run).
int run_bench_ui(const BenchUiOptions& o, std::ostream& out);

}  // namespace mnemo::app
