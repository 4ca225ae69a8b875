// `mnemoscope demo` (and `mnemoscope` with no subcommand): the desktop app on the shipped
// sample document when a display is present; without one, the headless step writing figures.
#include "app/cli/assets.h"
#include "app/cli/owned_dir.h"
#include "app/commands/commands.h"
#include "app/commands/step.h"
#ifdef MNEMO_WITH_GUI
#include "app/commands/gui.h"
#endif

namespace mnemo::app {

int run_demo(const std::string& out_dir, std::ostream& out) {
  std::string no_display = "this build has no desktop app (MNEMO_GUI=OFF)";
#ifdef MNEMO_WITH_GUI
  if (int rc = run_demo_gui(out, &no_display); rc >= 0) return rc;
#endif
  ModelFlags mf;
  CLI::App flags;
  mf.add_to(&flags);
  StepOptions so;
  if (!find_demo_model(&mf.checkpoint, &so.doc)) {
    mf.config = find_session_config("demo-memformer.json");
    so.doc = find_asset("sample.txt");
  }
  so.out = out_dir;
  // The headless demo rewrites its own folder: one that holds only what an earlier step
  // listed in its manifest is cleared; anything else is refused as usual (app/cli/owned_dir.h).
  so.force = is_dir(out_dir) && unlisted_entries(out_dir).empty();
  out << "demo: no window (" << no_display << "); running the headless step on " << so.doc << " instead\n";
  const int rc = run_step(mf, so, out);
  out << "demo: open " << out_dir << "/step-0003/writer_attention_mean.png to see the writer attention\n";
  return rc;
}

namespace {

class DemoCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("demo", "the app on the zoo's demo model and its document (headless step without a display)");
    c->add_option("--out", out_, "where the headless demo writes figures");
    return c;
  }
  int run(std::ostream& out) override { return run_demo(out_, out); }

 private:
  std::string out_ = "mnemoscope-demo";
};

}  // namespace

std::unique_ptr<Command> make_demo_command() { return std::make_unique<DemoCommand>(); }

}  // namespace mnemo::app
