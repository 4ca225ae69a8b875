// The CLI side of the desktop app: `mnemoscope gui ...`, `mnemoscope bench ui`, and the
// demo's choice between the window and the headless step. app/cli.cpp calls these only
// when the build has the GUI (MNEMO_WITH_GUI).
#pragma once
#include "app/cli_common.h"
#include "app/gui/app.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace mnemo::app {

struct GuiCommands {
  CLI::App* gui = nullptr;
  CLI::App* bench_ui = nullptr;
  CLI::App* bench_dashboard = nullptr;
  ModelFlags model;
  std::string doc, screenshot, size, mouse, export_dir, session, compare;
  int steps = 0, select_slot = -1, gallery_size = -1;
  bool quit = false, gallery = false, no_save = false;
  BenchUiOptions bench, bench_dash;
};

// Adds `gui` to app and `ui` to the `bench` subcommand.
void add_gui_commands(CLI::App& app, CLI::App* bench, GuiCommands& c);
// Runs whichever of them was chosen; returns -1 when neither was. Bad flags throw UsageError
// (exit code 2) before any window opens.
int run_gui_commands(const GuiCommands& c, std::ostream& out);
// The demo's window: the sample document with the demo config. Returns -1 (and *why) when
// there is no display, so the caller can fall back to the headless step.
int run_demo_gui(std::ostream& out, std::string* why);

}  // namespace mnemo::app
