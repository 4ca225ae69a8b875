// `mnemoscope gui`: the desktop app (app/gui/app.h) on a document and a model, or replaying
// and following a training session (--session). Every flag is checked, and the model is
// built once, before the window opens, so bad input exits with code 2 and no window.
#include "app/commands/gui.h"

#include "app/cli/assets.h"
#include "app/commands/commands.h"
#include "app/gui/model/worker.h"
#include "app/gui/platform/settings.h"
#include "app/gui/platform/window.h"
#include "core/io/atomic_file.h"
#include "core/io/session.h"

#include <cstdio>

namespace mnemo::app {

namespace {

struct GuiFlags {
  ModelFlags model;
  std::string doc, screenshot, size, mouse, export_dir, session, compare;
  int steps = 0, select_slot = -1, gallery_size = -1;
  bool quit = false, gallery = false, no_save = false, model_picker = false;
};

void parse_pair(const std::string& flag, const std::string& v, char sep, float* a, float* b) {
  const auto p = v.find(sep);
  try {
    size_t n1 = 0, n2 = 0;
    if (p == std::string::npos) throw std::invalid_argument("no separator");
    *a = std::stof(v.substr(0, p), &n1);
    *b = std::stof(v.substr(p + 1), &n2);
    if (n1 != p || n2 != v.size() - p - 1) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw UsageError(flag + " '" + v + "' is not of the form A" + std::string(1, sep) + "B");
  }
}

GuiOptions resolve_gui(const GuiFlags& c) {
  GuiOptions o;
  if (!c.session.empty()) {
    // Replay / follow a training session: no document or model of our own.
    if (!c.doc.empty() || !c.model.checkpoint.empty())
      throw UsageError("--session replays the session's recorded probe; leave out --doc and --checkpoint");
    for (const std::string* d : {&c.session, &c.compare}) {
      if (d->empty()) continue;
      try {
        io::Session::open(*d, 3, io::SessionAccess::kReadOnly);
      } catch (const std::exception& e) {
        throw UsageError(std::string(d == &c.session ? "--session: " : "--compare: ") + e.what());
      }
    }
    o.session = absolute_path(c.session);
    o.compare = c.compare.empty() ? std::string() : absolute_path(c.compare);
  } else if (!c.compare.empty()) {
    throw UsageError("--compare overlays a second session on the dashboard; pass --session DIR too");
  }
  o.doc = c.doc.empty() ? find_asset("sample.txt") : c.doc;
  load_doc_flag(o.doc);  // exit 2 naming --doc for a missing, empty or unreadable file
  o.doc = absolute_path(o.doc);  // shown in the app; the default export folder sits beside it
  ModelFlags mf = c.model;
  if (mf.config.empty() && mf.checkpoint.empty()) mf.config = find_session_config("demo-memformer.json");
  o.cfg = mf.resolve();
  o.seed = mf.seed;
  o.checkpoint = mf.checkpoint;
  {
    // Build the model once here, so a config that does not fit (e.g. --linear hashed with a
    // width that is not a multiple of --hash-bits) exits with code 2 before the window opens.
    ModelConfig cfg = o.cfg;
    try {
      check_gui_model(&cfg, o.seed, o.checkpoint);
    } catch (const std::exception& e) {
      throw UsageError(std::string(o.checkpoint.empty() ? "--model: " : "--checkpoint: ") + e.what());
    }
    o.cfg = cfg;
  }
  if (c.steps < 0 || c.steps > 1000000) throw UsageError("--steps " + std::to_string(c.steps) + " is out of range 0..1000000");
  o.steps = c.steps;
  o.quit = c.quit;
  o.gallery = c.gallery;
  o.model_picker = c.model_picker;
  try {
    o.zoo_dir = find_asset("models");
  } catch (const InputError&) {
    // a checkout without assets/models: the picker says the zoo is empty
  }
  o.select_slot = c.select_slot;
  if (c.gallery_size >= 0) {
    o.gallery = true;
    o.gallery_size = c.gallery_size;
  }
  if (!c.size.empty()) {
    float w = 0, h = 0;
    parse_pair("--size", c.size, 'x', &w, &h);
    if (w < 320 || h < 240 || w > 8192 || h > 8192) throw UsageError("--size " + c.size + " must be between 320x240 and 8192x8192");
    o.width = static_cast<int>(w);
    o.height = static_cast<int>(h);
  }
  if (!c.mouse.empty()) parse_pair("--mouse", c.mouse, ',', &o.mouse_x, &o.mouse_y);
  if (!c.screenshot.empty()) {
    std::string dir = c.screenshot;
    const auto slash = dir.find_last_of('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
    if (!is_dir(dir)) throw UsageError("--screenshot '" + c.screenshot + "': directory '" + dir + "' does not exist");
    if (is_dir(c.screenshot)) throw UsageError("--screenshot '" + c.screenshot + "' is a directory; pass a .png file name");
    o.screenshot = c.screenshot;
  }
  if (!c.export_dir.empty()) {
    io::check_output_dir(c.export_dir, "--export");
    o.export_dir = c.export_dir;
  }
  // Scripted runs (--quit) leave the user's layout and recent files alone.
  o.persist = !c.no_save && !c.quit;
  return o;
}

class GuiCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    GuiFlags& c = c_;
    CLI::App* g = app.add_subcommand("gui", "the desktop app (also: no subcommand, or demo, when a display is present)");
    g->add_option("--doc", c.doc, "document to open (default assets/sample.txt)");
    c.model.add_to(g);
    g->add_option("--steps", c.steps, "step this many segments at start");
    g->add_option("--screenshot", c.screenshot, "write a PNG of the window once the steps are shown");
    g->add_flag("--quit", c.quit, "quit once the steps, screenshot and export are done (nothing saved to the config dir)");
    g->add_option("--size", c.size, "window size WxH (default: fit the monitor, at most 1920x1080)");
    g->add_flag("--gallery", c.gallery, "open the gallery (every panel on synthetic traces)");
    g->add_flag("--model-picker", c.model_picker, "open File > Open model... (the zoo) at start");
    g->add_option("--gallery-size", c.gallery_size, "gallery's synthetic size (index of its size list)");
    g->add_option("--select-slot", c.select_slot, "select this slot once the first step is shown");
    g->add_option("--mouse", c.mouse, "put the mouse at X,Y (screenshots with a tooltip)");
    g->add_option("--export", c.export_dir, "once the steps are shown, export every panel into this folder");
    g->add_flag("--no-save", c.no_save, "do not read or write the layout and recent files");
    g->add_option("--session", c.session,
                  "replay a training session (from `mnemoscope train`), following it live while it is written");
    g->add_option("--compare", c.compare, "with --session: overlay this second session's curves (dashed)");
    return g;
  }
  int run(std::ostream& out) override {
    GuiOptions o = resolve_gui(c_);
    std::string why;
    if (!display_available(&why))
      throw UsageError("no display for the window (" + why +
                       "); run under a desktop session or xvfb-run, or use 'mnemoscope step' for figures without a window");
    return run_gui(o, out);
  }

 private:
  GuiFlags c_;
};

}  // namespace

std::unique_ptr<Command> make_gui_command() { return std::make_unique<GuiCommand>(); }

int run_demo_gui(std::ostream& out, std::string* why) {
  if (!display_available(why)) return -1;
  GuiFlags c;
  CLI::App flags;
  c.model.add_to(&flags);
  if (find_demo_model(&c.model.checkpoint, &c.doc))
    out << "demo: the trained zoo model " << c.model.checkpoint << " (docs/zoo/" << kDemoModel << ".md)\n";
  else
    out << "demo: no zoo model " << kDemoModel << " in assets/models: a randomly initialised Memformer\n";
  GuiOptions o = resolve_gui(c);
  out << "demo: opening the desktop app on " << o.doc
      << " (Right arrow steps, Space plays, Ctrl+M opens another trained model; Help lists the keys)\n";
  return run_gui(o, out);
}

}  // namespace mnemo::app
