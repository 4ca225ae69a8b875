// app/gui — the desktop app, split as Tracy splits its server from its profiler UI:
//   model/     what the app shows and controls, as plain C++ (no ImGui, no LibTorch in its
//              headers): the published PublishedView, the Worker thread that owns the model,
//              the replay of recorded sessions, the dashboard's data, the view model;
//   platform/  the GLFW + OpenGL window, textures, screenshots, settings;
//   shell/     the frame: menus, panel windows and layout, keys, dialogs, the export job;
//   panels/    one file per panel, drawing a PublishedView (widgets/: the ImGui helpers).
// This header is the entry point that wires them: run_gui opens the window, starts the
// worker (or the replay of a session) and runs the frame loop until the window closes.
#pragma once
#include "core/models/config.h"
#include "core/models/stepping.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct GuiOptions {
  std::string doc;           // document path (checked before the window opens)
  ModelConfig cfg;           // validated model config
  uint64_t seed = 0;
  std::string checkpoint;
  // Tokens per segment to step at (0 = as the checkpoint was trained; core/models/stepping.h),
  // and how that was chosen (for the log line).
  int64_t segment_len = 0, compare_segment_len = 0;
  Stepping stepping;
  int steps = 0;             // step this many segments at start
  std::string screenshot;    // PNG of the window once the steps are shown
  bool quit = false;         // quit once the steps (and screenshot) are done
  int width = 0, height = 0; // window size; 0 = fit the monitor (at most 1920x1080)
  bool gallery = false;      // open the gallery window
  bool model_picker = false; // open File > Open model... at start
  std::string zoo_dir;       // the model zoo File > Open model... lists (assets/models; "" none)
  int gallery_size = -1;     // gallery's synthetic size index
  int select_slot = -1;      // select this slot once the first step arrives
  int64_t select_token = -1; // select this document token in the Document panel (what it read from memory)
  float mouse_x = -1, mouse_y = -1;  // a synthetic mouse position (screenshots with a tooltip)
  std::string export_dir;    // once the steps are shown: export every panel there (as File > Export all)
  bool persist = true;       // read and write imgui.ini and recent files in the config dir
  std::string session;       // replay / follow this training session (no model; doc and cfg unused)
  std::string compare;       // overlay this second session's curves on the dashboard
  // Side by side (docs/gui.md#side-by-side): a second model stepped in lockstep on the same
  // document; empty compare_label = none.
  ModelConfig compare_cfg;
  std::string compare_checkpoint, compare_label;
  std::string label;         // the first model's name over its column ("" = its kind)
  // Tours (docs/gui.md#tours): the shipped tours the Tour menu lists, one to play at start,
  // and (tour export) the folder every stop is written to as stop-NN.png, then quit.
  std::vector<std::string> tours;
  std::string tour, tour_export_dir;
  int tint = 0;              // the Document panel's tint: 0 visited, 1 loss, 2 provenance, 3 memory benefit
  bool presenter = false;    // start in presenter mode (full screen)
  float ui_scale = 1.f;      // presenter mode's UI scale, 1.0..2.5
  bool high_contrast = false;
};

// Runs the app until the window closes (or --quit). Returns the exit code: 0, or 1 when
// the window or GL context cannot be created or a --quit run met a problem.
int run_gui(const GuiOptions& o, std::ostream& log);

}  // namespace mnemo::app
