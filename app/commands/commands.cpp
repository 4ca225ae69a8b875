#include "app/commands/commands.h"

namespace mnemo::app {

CommandTable make_command_table() {
  CommandTable t;
  t.commands.push_back(make_info_command());
  t.commands.push_back(make_step_command());
  t.commands.push_back(make_html_command());
  t.commands.push_back(make_export_weights_command());
  t.commands.push_back(make_bench_command());
  t.commands.push_back(make_train_command());
  t.commands.push_back(make_eval_command());
  t.commands.push_back(make_mtn_qa_command());
  t.commands.push_back(make_export_command());
  t.commands.push_back(make_plot_command());
  t.commands.push_back(make_zoo_command());
  t.commands.push_back(make_demo_command());
#ifdef MNEMO_WITH_GUI
  t.commands.push_back(make_gui_command());
  t.commands.push_back(make_tour_command());
#endif
  t.fallback = [](std::ostream& out) { return run_demo("mnemoscope-demo", out); };
  return t;
}

}  // namespace mnemo::app
