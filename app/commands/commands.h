// app/commands — the subcommands of `mnemoscope`, one file each, all registered the same way:
// a class implementing Command (app/cli/cli.h) that declares its flags in add() and does its
// work in run(), made by the factory below and listed once in make_command_table(). A
// command validates all of its input before it writes anything. `bench` is a group whose
// members live in app/bench/.
#pragma once
#include "app/cli/cli.h"

#include <memory>

namespace mnemo::app {

std::unique_ptr<Command> make_info_command();            // info
std::unique_ptr<Command> make_step_command();            // step
std::unique_ptr<Command> make_html_command();            // html
std::unique_ptr<Command> make_export_weights_command();  // export-weights
std::unique_ptr<Command> make_train_command();           // train
std::unique_ptr<Command> make_eval_command();            // eval
std::unique_ptr<Command> make_export_command();          // export
std::unique_ptr<Command> make_plot_command();            // plot
std::unique_ptr<Command> make_mtn_qa_command();          // mtn-qa
std::unique_ptr<Command> make_demo_command();            // demo
std::unique_ptr<Command> make_gui_command();             // gui (only in builds with the desktop app)
std::unique_ptr<Command> make_tour_command();            // tour (only in builds with the desktop app)
std::unique_ptr<Command> make_bench_command();           // bench <step|hashed-linear|...>
std::unique_ptr<Command> make_zoo_command();             // zoo <pack|list>

// Every subcommand in the order of --help; with no subcommand the demo runs.
CommandTable make_command_table();

// The demo without a subcommand or flags: the app on the sample document when a display is
// present, else the headless step into ./mnemoscope-demo.
int run_demo(const std::string& out_dir, std::ostream& out);

}  // namespace mnemo::app
