// `mnemoscope demo` (and `mnemoscope` with no subcommand): the desktop app on the shipped
// sample document when a display is present; without one, the headless step writing figures.
#include "app/cli/assets.h"
#include "app/cli/owned_dir.h"
#include "app/commands/commands.h"
#include "app/commands/step.h"
#ifdef MNEMO_WITH_GUI
#include "app/commands/gui.h"
#endif

#include <cstdio>

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
  if (find_demo_model(&mf.checkpoint, &so.doc)) {
    so.to_end = true;  // the whole episode: the facts, the distractors and the recall at the end
  } else {
    mf.config = find_session_config("demo-memformer.json");  // a random model: its first segments show enough
    so.doc = find_asset("sample.txt");
  }
  so.out = out_dir;
  // The headless demo rewrites its own folder: one that holds only what an earlier step
  // listed in its manifest is cleared; anything else is refused as usual (app/cli/owned_dir.h).
  so.force = is_dir(out_dir) && unlisted_entries(out_dir).empty();
  out << "demo: no window (" << no_display << "); running the headless step on " << so.doc << " instead\n";
  int64_t last = 0;
  const int rc = run_step(mf, so, out, &last);
  char step_dir[32];
  std::snprintf(step_dir, sizeof step_dir, "step-%04lld", static_cast<long long>(last));
  out << "demo: open " << out_dir << "/" << step_dir << "/writer_attention_mean.png to see the writer attention at the "
      << (so.to_end ? "document's last segment" : "last segment stepped") << "; every stepped segment's figures are in "
      << out_dir << "/step-NNNN/\n";
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
