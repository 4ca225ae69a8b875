// `mnemoscope gui`: the desktop app (app/gui/app.h) on a document and a model, or replaying
// and following a training session (--session). Every flag is checked, and the model is
// built once, before the window opens, so bad input exits with code 2 and no window.
#include "app/commands/gui.h"

#include "app/cli/assets.h"
#include "app/commands/commands.h"
#include "app/gui/model/entry_effect.h"
#include "app/gui/model/tour.h"
#include "app/gui/model/tour_check.h"
#include "app/gui/model/worker.h"
#include "app/gui/model/zoo_catalog.h"
#include "app/gui/platform/settings.h"
#include "app/gui/platform/window.h"
#include "app/gui/shell/shell.h"
#include "core/io/atomic_file.h"
#include "core/io/session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <filesystem>
#include <limits>
#include <optional>

namespace mnemo::app {

namespace {

constexpr int kNotGiven = std::numeric_limits<int>::min();

struct GuiFlags {
  ModelFlags model;
  std::string doc, screenshot, size, mouse, export_dir, session, compare, compare_model, tour, tint;
  float ui_scale = 1.f;
  double session_wait = 30.0;  // seconds --session waits for a session to appear
  bool presenter = false, high_contrast = false;
  int steps = 0, old_steps = kNotGiven, select_slot = -1, gallery_size = -1;
  int64_t select_token = -1;
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

void add_presenter_flags(CLI::App* g, GuiFlags& c) {
  g->add_flag("--presenter", c.presenter, "presenter mode: full screen");
  g->add_option("--ui-scale", c.ui_scale, "fonts and line widths, 1.0..2.5 (presenter mode)");
  g->add_flag("--high-contrast", c.high_contrast, "heatmaps in black to white (projectors)");
}

std::vector<std::string> list_json_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `gui --session DIR` started just before `train --out DIR`: wait for the session to appear
// (the directory and its manifest.json) rather than fail; anything else found there is
// judged at once.
void wait_for_session(const GuiFlags& c, std::ostream* default_model) {
  namespace fs = std::filesystem;
  // Pending: no such path yet, or a directory holding nothing but what Session::create
  // makes before its manifest (checkpoints/, traces/) and the manifest being written (a
  // folder with other files and no manifest is not a session: said at once).
  auto pending = [&] {
    std::error_code ec;
    if (!fs::exists(c.session, ec)) return true;
    if (!fs::is_directory(c.session, ec) || fs::exists(fs::path(c.session) / "manifest.json", ec)) return false;
    for (const auto& e : fs::directory_iterator(c.session, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("manifest", 0) != 0 && name.rfind(".", 0) != 0 && name != "checkpoints" && name != "traces")
        return false;
    }
    return true;
  };
  if (!pending() || c.session_wait <= 0) return;
  if (default_model)
    *default_model << "gui: waiting up to " << c.session_wait << " s for a training session in " << c.session
                   << " (start `mnemoscope train --out " << c.session << "`; --session-wait S)\n" << std::flush;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(c.session_wait);
  while (pending() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (pending())
    throw UsageError("--session: no training session appeared in '" + c.session + "' within " +
                     number_text(c.session_wait) + " s; start `mnemoscope train --out " + c.session +
                     "` (or check the path; --session-wait S waits longer)");
}

// --session (and --compare): replay / follow a training session, with no document or model of
// our own. Returns the replayed session's model config when it names one.
std::optional<nlohmann::json> resolve_session(const GuiFlags& c, GuiOptions& o, std::ostream* default_model) {
  std::optional<nlohmann::json> session_model;
  if (c.session.empty()) {
    if (!c.compare.empty()) throw UsageError("--compare overlays a second session on the dashboard; pass --session DIR too");
    return session_model;
  }
  // The session brings its own model and probe document: a model flag would be ignored.
  std::vector<std::string> ignored = c.model.given();
  if (!c.doc.empty()) ignored.insert(ignored.begin(), "--doc");
  if (!ignored.empty()) {
    std::string list;
    for (const auto& f : ignored) list += (list.empty() ? "" : ", ") + f;
    throw UsageError("--session replays the session's own model on its recorded probe, so " + list +
                     (ignored.size() == 1 ? " does" : " do") + " not apply; leave " +
                     (ignored.size() == 1 ? "it" : "them") + " out (or drop --session to step a model of your own)");
  }
  wait_for_session(c, default_model);
  for (const std::string* d : {&c.session, &c.compare}) {
    if (d->empty()) continue;
    try {
      const io::Session s = io::Session::open(*d, 3, io::SessionAccess::kReadOnly);
      const auto& m = s.manifest();
      if (d == &c.session && m.contains("config") && m["config"].is_object() && m["config"].contains("model"))
        session_model = m["config"]["model"];
    } catch (const std::exception& e) {
      throw UsageError(std::string(d == &c.session ? "--session: " : "--compare: ") + e.what());
    }
  }
  o.session = absolute_path(c.session);
  o.compare = c.compare.empty() ? std::string() : absolute_path(c.compare);
  return session_model;
}

// The document and the model (built once here, so a config that does not fit exits with code 2
// before the window opens).
void resolve_doc_and_model(const GuiFlags& c, GuiOptions& o, std::ostream* default_model) {
  o.doc = c.doc.empty() ? find_asset("sample.txt") : c.doc;
  load_doc_flag(o.doc);  // exit 2 naming --doc for a missing, empty or unreadable file
  o.doc = absolute_path(o.doc);  // shown in the app; the default export folder sits beside it
  ModelFlags mf = c.model;
  if (default_model && c.session.empty() && !c.gallery)
    mf.apply_default_text_model(*default_model);  // no model flag: the zoo's text model, not a random one
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
    // As the checkpoint was trained, unless --segment-len (with a checkpoint: how the
    // document is cut, at most the model's segment_len); the worker chooses the same way.
    o.stepping = mf.stepping(o.cfg);
    o.segment_len = o.stepping.requested ? o.stepping.segment_len : 0;
  }
}

// The window's own flags: the steps, the selected slot and token, sizes, the pointer, and the
// files it writes (--screenshot, --export), checked before the window opens.
void resolve_window_flags(const GuiFlags& c, const std::optional<nlohmann::json>& session_model, GuiOptions& o) {
  const bool old = c.old_steps != kNotGiven;
  const int steps = old ? c.old_steps : c.steps;
  if (steps < 0 || steps > 1000000)
    throw UsageError(std::string(old ? "--steps " : "--segments ") + std::to_string(steps) + " is out of range 0..1000000");
  o.steps = steps;
  o.quit = c.quit;
  o.gallery = c.gallery;
  o.model_picker = c.model_picker;
  try {
    o.zoo_dir = find_asset("models");
  } catch (const InputError&) {
    // a checkout without assets/models: the picker says the zoo is empty
  }
  {
    // The selected entry must exist in the model shown (a replayed session's own model).
    ModelConfig shown = o.cfg;
    if (!c.session.empty()) {
      try {
        shown = ModelConfig::from_json(session_model.value());
      } catch (const std::exception&) {
        shown.slots = std::numeric_limits<int64_t>::max();  // no model config to check against
      }
    }
    if (c.select_slot < -1 || c.select_slot >= shown.slots)
      throw UsageError("--select-slot " + std::to_string(c.select_slot) + " is out of range: the " + shown.model + " has " +
                       std::to_string(shown.slots) + " memory entries (0.." + std::to_string(shown.slots - 1) + ")");
  }
  o.select_slot = c.select_slot;
  if (c.select_token < -1) throw UsageError("--select-token " + std::to_string(c.select_token) + " must be a token index >= 0");
  o.select_token = c.select_token;
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
    const std::string dir = io::parent_directory(c.screenshot);
    if (!is_dir(dir)) throw UsageError("--screenshot '" + c.screenshot + "': directory '" + dir + "' does not exist");
    if (is_dir(c.screenshot)) throw UsageError("--screenshot '" + c.screenshot + "' is a directory; pass a .png file name");
    check_can_write_in(dir, "--screenshot '" + c.screenshot + "'");  // exit 2 now, not after the window opened
    o.screenshot = c.screenshot;
  }
  if (!c.export_dir.empty()) {
    io::check_output_dir(c.export_dir, "--export");
    make_out_dir(c.export_dir, "--export");  // a folder that cannot be made fails now, not after the window opened
    check_can_write_in(c.export_dir, "--export '" + c.export_dir + "'");
    o.export_dir = c.export_dir;
  }
}

// Side by side: the second model, built once here like the first.
void resolve_compare_flag(const GuiFlags& c, GuiOptions& o, std::ostream* default_model) {
  if (c.compare_model.empty()) return;
  if (!c.session.empty())
    throw UsageError("--compare-model steps a second model beside the first; a replayed --session has no model to step");
  ModelConfig cfg = o.cfg;
  int64_t trained_b = 0;
  try {
    o.compare_checkpoint = resolve_compare_model(c.compare_model, o.zoo_dir, &cfg, &o.compare_label);
    check_gui_model(&cfg, o.seed, o.compare_checkpoint, &trained_b);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--compare-model: ") + e.what());
  }
  o.compare_cfg = cfg;
  // Lockstep shows segment i of both: B is cut as A is when it can take A's segments (its
  // Controls say so when B was trained otherwise), else as B was trained.
  const Stepping b = choose_stepping(cfg, trained_b);
  if (b.segment_len != o.stepping.segment_len) {
    if (o.stepping.segment_len <= cfg.segment_len) {
      o.compare_segment_len = o.stepping.segment_len;
    } else if (default_model) {
      *default_model << "note: --compare-model: the two models step different segments (" << o.stepping.segment_len
                     << " and " << b.segment_len << " tokens; B takes at most " << cfg.segment_len
                     << "): segment i of A and of B cover different tokens\n";
    }
  }
  o.label = o.checkpoint.empty() ? o.cfg.model : base_name(o.checkpoint);
  if (o.label == o.compare_label) {
    o.label += " (A)";
    o.compare_label += " (B)";
  }
}

// Tours: the shipped ones for the Tour menu, and one to play now (checked here).
void resolve_tours(const GuiFlags& c, GuiOptions& o) {
  try {
    const std::string dir = find_asset("tours");
    for (const auto& name : list_json_files(dir)) o.tours.push_back(dir + "/" + name);
  } catch (const InputError&) {
    // a checkout without assets/tours: the Tour menu only opens files
  }
  if (!c.tour.empty() && !c.session.empty())
    throw UsageError("--tour steps the zoo models its stops name; a replayed --session has no model to step: leave out "
                     "one of them");
  if (!c.tour.empty()) {
    try {
      load_tour(c.tour, o.zoo_dir);
    } catch (const TourError& e) {
      throw UsageError(e.what());  // "tour FILE, stop N, field F: ..."
    }
    o.tour = c.tour;
  }
}

// default_model: where to say that the zoo's text model opens when no model flag is given
// (`gui`); null: no default model (a tour's stops and the demo name their own).
GuiOptions resolve_gui(const GuiFlags& c, std::ostream* default_model = nullptr) {
  GuiOptions o;
  const std::optional<nlohmann::json> session_model = resolve_session(c, o, default_model);
  resolve_doc_and_model(c, o, default_model);
  resolve_window_flags(c, session_model, o);
  resolve_compare_flag(c, o, default_model);
  resolve_tours(c, o);
  if (!(c.ui_scale >= 1.f && c.ui_scale <= 2.5f))
    throw UsageError("--ui-scale " + number_text(c.ui_scale) + " is out of range 1.0..2.5");
  o.ui_scale = c.ui_scale;
  o.presenter = c.presenter;
  o.high_contrast = c.high_contrast;
  if (!c.tint.empty()) {
    if (c.tint == "visited") o.tint = 0;
    else if (c.tint == "loss") o.tint = 1;
    else if (c.tint == "provenance") o.tint = 2;
    else if (c.tint == "benefit") o.tint = 3;
    else if (c.tint == "slot-effect") o.tint = 4;
    else throw UsageError("--tint '" + c.tint + "' is not a tint; use visited, loss, provenance, benefit or slot-effect");
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
    g->add_option("--segments", c.steps, "step this many segments at start");
    g->add_option("--steps", c.old_steps, "old name of --segments (deprecated; train --steps counts optimizer steps)");
    g->add_option("--screenshot", c.screenshot, "write a PNG of the window once the steps are shown");
    g->add_flag("--quit", c.quit, "quit once the steps, screenshot and export are done (nothing saved to the config dir)");
    g->add_option("--size", c.size, "window size WxH (default: fit the monitor, at most 1920x1080)");
    g->add_flag("--gallery", c.gallery, "open the gallery (every panel on synthetic traces)");
    g->add_flag("--model-picker", c.model_picker, "open File > Open model... (the zoo) at start");
    g->add_option("--gallery-size", c.gallery_size, "gallery's synthetic size (index of its size list)");
    g->add_option("--select-slot", c.select_slot, "select this slot once the first step is shown");
    g->add_option("--select-token", c.select_token,
                  "select this document token (0-based) in the Document panel: what it read from the memory, when the "
                  "shown segment holds it (Memformer: or its step predicts it)");
    g->add_option("--mouse", c.mouse, "put the mouse at X,Y (screenshots with a tooltip)");
    g->add_option("--export", c.export_dir, "once the steps are shown, export every panel into this folder");
    g->add_flag("--no-save", c.no_save, "do not read or write the layout and recent files");
    g->add_option("--session", c.session,
                  "replay a training session (from `mnemoscope train`), following it live while it is written");
    g->add_option("--session-wait", c.session_wait,
                  "seconds to wait for --session DIR to appear (a run started a moment later), default 30; 0: fail at once")
        ->check(CLI::Range(0.0, 86400.0));
    g->add_option("--compare", c.compare, "with --session: overlay this second session's curves (dashed)");
    add_presenter_flags(g, c);
    g->add_option("--compare-model", c.compare_model,
                  "step a second model (zoo name, weights file or config .json) beside the first, in lockstep");
    g->add_option("--tour", c.tour, "play this tour (docs/gui.md#tours)");
    g->add_option("--tint", c.tint, "the Document panel's tint at start: visited, loss, provenance (of --select-slot), benefit (what the "
                    "memory saved on each token) or slot-effect (what --select-slot's entry saved on each token the shown "
                    "step predicts, computed after --steps)");
    return g;
  }
  int run(std::ostream& out) override {
    GuiOptions o = resolve_gui(c_, &out);
    if (c_.old_steps != kNotGiven)
      out << "note: gui --steps is deprecated and will be removed in the next release; use --segments "
          << c_.old_steps << " (segments to step at start; --steps means optimizer steps in train)\n";
    std::string why;
    if (!display_available(&why))
      throw UsageError("no display for the window (" + why +
                       "); run under a desktop session or xvfb-run, or use 'mnemoscope step' for figures without a window");
    return run_gui(o, out);
  }

 private:
  GuiFlags c_;
};

// Plays `tour` as the app does (app/gui/shell/tour.cpp apply_tour: a stop on another model,
// document or segmentation opens it, then jumps to the stop's segment) on a Worker with no
// window, and checks every stop's claims on what the worker publishes. Returns the number of
// failed checks; prints one line per check.
int check_tour(const Tour& tour, std::ostream& out) {
  Worker w;
  int64_t posted = 0;
  int failed = 0, checked = 0;
  auto wait = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    while (w.finished() < posted) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::minutes(10))
        throw InputError("tour --check: the model did not finish stepping within 10 minutes");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  out << "tour " << tour.path << ": " << tour.stops.size() << " stops\n";
  for (const auto& st : tour.stops) {
    ViewPtr s = w.latest();
    if (!view_shows_stop(st, *s)) {
      w.open_document_and_model(st.document, st.cfg, 0, st.checkpoint, st.segment_len);
      ++posted;
    }
    w.jump(st.segment);
    ++posted;
    wait();
    for (const auto& e : w.take_errors()) throw InputError("tour " + tour.path + ", stop " + std::to_string(st.number) + ": " + e);
    s = w.latest();
    if (!s->step || s->step->segment != st.segment)
      throw InputError("tour " + tour.path + ", stop " + std::to_string(st.number) + ": segment " + std::to_string(st.segment) +
                       " was not shown");
    // A slot_effect tint or claim: what each memory entry did at this step, as the app computes
    // it there (app/gui/shell/tour.cpp).
    const bool effects = st.tint == "slot_effect" ||
                         std::any_of(st.checks.begin(), st.checks.end(), [](const TourCheck& c) { return c.kind == "slot_effect"; });
    if (effects) {
      w.compute_slot_effects();
      ++posted;
      wait();
      for (const auto& e : w.take_errors())
        throw InputError("tour " + tour.path + ", stop " + std::to_string(st.number) + ": " + e);
      s = w.latest();
    }
    out << "stop " << st.number << " (" << st.model << ", segment " << st.segment << " of " << st.num_segments << ", "
        << s->info->stepping.describe() << "): " << st.checks.size() << " checks\n";
    for (const auto& r : check_stop(st, *s, entry_effect_apart)) {
      ++checked;
      if (!r.pass) ++failed;
      out << "  " << describe_result(r) << "\n";
    }
  }
  // The screen: every stop as the app lays it out at a projector's and a laptop's size and in
  // presenter mode (Shell::tour_screen_problems: named panels drawn whole, captions whole).
  const TourScreen screens[] = {{1600, 1000, 1.f}, {1280, 720, 1.f}, {1280, 720, 1.5f}};
  int screens_failed = 0;
  for (const auto& screen : screens) {
    const auto problems = check_tour_screen(tour, w, screen);
    if (!problems.empty()) ++screens_failed;
    out << "screen " << screen.describe() << ": "
        << (problems.empty() ? "[pass] every stop's named panels drawn whole, every caption whole" : "[FAIL]") << "\n";
    for (const auto& p : problems) out << "  " << p << "\n";
  }
  const int n_screens = static_cast<int>(sizeof screens / sizeof screens[0]);
  out << "tour " << tour.path << ": " << checked - failed << " of " << checked << " checks pass; the screen passes at "
      << n_screens - screens_failed << " of " << n_screens << " sizes\n";
  return failed + screens_failed;
}

// `mnemoscope tour FILE [--export DIR | --check]`: plays a tour in the app, writes every stop
// as DIR/stop-NN.png (slides) and quits, or checks every stop's claims without a window. The
// tour is checked before any window opens.
class TourCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    CLI::App* t = app.add_subcommand("tour", "play a guided tour (docs/gui.md#tours), or --export every stop as PNG");
    t->add_option("file", c_.tour, "the tour file (JSON, docs/formats.md#tours)")->required();
    t->add_option("--export", export_, "write every stop as DIR/stop-NN.png (slides) and quit");
    t->add_flag("--check", check_,
                "no window: play the tour and check every claim its stops declare (\"checks\", docs/formats.md#tours) "
                "on what the app shows; exit 1 when one fails");
    t->add_option("--size", c_.size, "window size WxH (default: fit the monitor, at most 1920x1080)");
    t->add_flag("--no-save", c_.no_save, "do not read or write the layout and recent files");
    add_presenter_flags(t, c_);
    return t;
  }
  int run(std::ostream& out) override {
    if (check_) {
      if (!export_.empty()) throw UsageError("--check plays the tour without a window; leave out --export");
      Tour tour;
      try {
        tour = load_tour(c_.tour, find_asset("models"));
      } catch (const TourError& e) {
        throw UsageError(e.what());
      } catch (const InputError& e) {
        throw UsageError(std::string("tour ") + c_.tour + ": " + e.what());
      }
      return check_tour(tour, out) == 0 ? 0 : 1;
    }
    GuiOptions o = resolve_gui(c_);
    if (!export_.empty()) {
      io::check_output_dir(export_, "--export");
      make_out_dir(export_, "--export");
      o.tour_export_dir = export_;
      o.persist = false;
    }
    std::string why;
    if (!display_available(&why))
      throw UsageError("no display for the window (" + why + "); run under a desktop session or xvfb-run -a");
    const int rc = run_gui(o, out);
    if (rc == 0 && !export_.empty()) out << "tour: every stop is in " << export_ << "\n";
    return rc;
  }

 private:
  GuiFlags c_;
  std::string export_;
  bool check_ = false;
};

}  // namespace

std::unique_ptr<Command> make_gui_command() { return std::make_unique<GuiCommand>(); }
std::unique_ptr<Command> make_tour_command() { return std::make_unique<TourCommand>(); }

GuiOptions demo_gui_options(std::ostream& out) {
  GuiFlags c;
  CLI::App flags;
  c.model.add_to(&flags);
  const bool zoo = find_demo_model(&c.model.checkpoint, &c.doc);
  if (zoo)
    out << "demo: the trained zoo model " << c.model.checkpoint << " (docs/zoo/" << kDemoModel << ".md)\n";
  else
    out << "demo: no zoo model " << kDemoModel << " in assets/models: a randomly initialised Memformer\n";
  GuiOptions o = resolve_gui(c);
  // Open where the README's first screenshot is: segments 0 and 1 stepped (the two facts
  // written) with slot 0 followed, so no panel starts empty. The random fallback steps once.
  o.steps = zoo ? 2 : 1;
  o.select_slot = 0;
  return o;
}

int run_demo_gui(std::ostream& out, std::string* why) {
  if (!display_available(why)) return -1;
  GuiOptions o = demo_gui_options(out);
  out << "demo: opening the desktop app on " << o.doc << " at segment " << o.steps - 1
      << " (Right arrow steps, Left goes back, Space plays, Ctrl+M opens another trained model; Help lists the keys)\n";
  return run_gui(o, out);
}

}  // namespace mnemo::app
