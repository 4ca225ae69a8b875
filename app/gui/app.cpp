#include "app/gui/app.h"

#include "app/gui/model/lockstep.h"
#include "app/gui/model/replay.h"
#include "app/gui/model/tour.h"
#include "app/gui/model/worker.h"
#include "app/gui/model/zoo_catalog.h"
#include "core/errors.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/platform/gl_textures.h"
#include "app/gui/platform/settings.h"
#include "app/gui/platform/window.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/shell.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cfloat>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <unistd.h>

namespace mnemo::app {

namespace {

// Ctrl+C / SIGTERM close the window cleanly, so the layout (imgui.ini) is saved.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int) { g_stop_signal = 1; }

// The exit code of a screenshot or export that could not be written: 2 for what the user can
// fix (a full disk, a folder without write permission: mnemo::Error, as on the command line),
// 1 for anything else.
int write_failure_code(const std::exception& e) { return dynamic_cast<const Error*>(&e) ? 2 : 1; }

Shell* g_drop_target = nullptr;
void on_drop(GLFWwindow*, int count, const char** paths) {
  if (g_drop_target && count > 0 && paths && paths[0]) g_drop_target->drop_file(paths[0]);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The models behind the window: a live model (Worker, and worker_b beside it side by side)
// stepped in lockstep, or a recorded session (ReplayController + dashboard).
struct GuiModels {
  std::unique_ptr<Worker> worker, worker_b;
  std::unique_ptr<LockstepController> lockstep;
  std::unique_ptr<ReplayController> replay;
  Controller* control = nullptr;
  int64_t commands = 0;  // commands sent to `worker` at start (the steps wait for them)
};

// Starts the session or the model(s) of `o` and sends the first steps.
void start_models(const GuiOptions& o, Shell& shell, std::ostream& log, GuiModels& m) {
  if (!o.session.empty()) {
    m.replay = std::make_unique<ReplayController>(o.session);  // checked by the CLI before the window opened
    shell.open_dashboard(o.session, m.replay.get());
    if (!o.compare.empty()) shell.dashboard().model().compare_with(o.compare);
    for (int i = 0; i < o.steps; ++i) m.replay->step(+1);
    m.control = m.replay.get();
    log << "gui: replaying and following session " << o.session << "\n";
    return;
  }
  m.worker = std::make_unique<Worker>([] { glfwPostEmptyEvent(); });
  // A tour's stops open their own models and documents: the default one is not started.
  const bool own_model = o.tour.empty();
  if (own_model) m.worker->start(o.doc, o.cfg, o.seed, o.checkpoint, o.segment_len);
  m.lockstep = std::make_unique<LockstepController>(m.worker.get(), nullptr);
  if (!o.compare_label.empty()) {
    m.worker_b = std::make_unique<Worker>([] { glfwPostEmptyEvent(); });
    m.worker_b->start(o.doc, o.compare_cfg, o.seed, o.compare_checkpoint, o.compare_segment_len);
    m.lockstep->set_b(m.worker_b.get());
    shell.set_compare_labels(o.label.empty() ? o.cfg.model : o.label, o.compare_label);
  }
  for (int i = 0; i < o.steps; ++i) m.lockstep->step(+1);
  m.commands = (own_model ? 1 : 0) + o.steps;
  // --tint slot-effect: what each memory entry did for the last step's predictions.
  if (own_model && o.steps > 0 && o.tint == DocumentPanel::kTintSlotEffect) {
    m.worker->compute_slot_effects();
    ++m.commands;
  }
  m.control = m.lockstep.get();
  if (!own_model) log << "gui: tour " << o.tour << "\n";
  else log << "gui: " << o.doc << " (" << o.cfg.model << (o.cfg.linear == "hashed" ? " with hashed layers" : "")
      << (o.cfg.uses_slots() ? ", " + std::to_string(o.cfg.slots) + " slots" : std::string(", no memory")) << ", "
      << o.stepping.describe()
      << ")" << (o.steps ? ", stepping " + std::to_string(o.steps) + " segments" : std::string()) << "\n";
  if (own_model && !o.stepping.as_trained())
    log << "warning: " << o.stepping.warning() << "; leave out --segment-len to step it as trained\n";
}

// File > Compare with model...: start (or stop) the second model on the same document.
void follow_compare_request(const GuiOptions& o, Shell& shell, GuiModels& m) {
  std::string cmp;
  if (!m.worker || !shell.take_compare_request(&cmp)) return;
  m.lockstep->set_b(nullptr);
  m.worker_b.reset();
  shell.set_compare_labels("A", "B");
  if (cmp.empty()) return;
  ViewPtr a = m.worker->latest();
  std::string label;
  ModelConfig cfg = a->info ? a->info->cfg : o.cfg;
  std::string ckpt;
  try {
    ckpt = resolve_compare_model(cmp, o.zoo_dir, &cfg, &label);
    if (!a->info) throw InputError("open a document first");
    m.worker_b = std::make_unique<Worker>([] { glfwPostEmptyEvent(); });
    // Cut as A is when B takes A's segments, so both show the same tokens.
    const int64_t len = a->info->segment_len <= cfg.segment_len ? a->info->segment_len : 0;
    m.worker_b->start(a->info->doc->path, cfg, a->info->seed, ckpt, len);
    if (a->position >= 0) m.worker_b->jump(a->position);
    m.lockstep->set_b(m.worker_b.get());
    shell.set_compare_labels(a->info->checkpoint.empty() ? a->info->cfg.model : base_name(a->info->checkpoint), label);
  } catch (const std::exception& e) {
    shell.push_error(std::string("Compare with model: ") + e.what());
  }
}

// The models' errors to the error popup (and, in a scripted run, to stderr with rc 1).
void report_model_errors(const GuiOptions& o, Shell& shell, GuiModels& m, bool scripted, int& rc) {
  for (auto& e : m.worker ? m.worker->take_errors() : m.replay->take_errors()) {
    if (scripted) std::fprintf(stderr, "mnemoscope: %s\n", e.c_str());
    shell.push_error(e);
    if (scripted) rc = 1;
  }
  if (m.worker_b)
    for (auto& e : m.worker_b->take_errors()) {
      if (scripted) std::fprintf(stderr, "mnemoscope: side B: %s\n", e.c_str());
      shell.push_error("Side B (" + o.compare_label + "): " + e);
      if (scripted) rc = 1;
    }
}

// The fonts at the presenter's UI scale, with the glyphs a document needs beyond the
// built-in ranges merged in from the fallback font.
struct GuiFonts {
  float scale = 1.f;           // the monitor's content scale
  float applied_ui_scale = 1.f;
  std::vector<char32_t> extra_glyphs;
  // Scrolling through such a document meets new characters every few frames: the atlas is
  // rebuilt with the ones gathered at most twice a second, not on every frame that finds one.
  std::vector<char32_t> pending_glyphs;
  std::chrono::steady_clock::time_point last_glyph_rebuild = std::chrono::steady_clock::now() - std::chrono::seconds(1);
};

// Presenter mode: full screen, and fonts rebuilt at the UI scale (crisp, not stretched). A
// document's characters no font has yet: rebuilt with them from the fallback font (the panel
// shows their code points meanwhile, and for good where none has them).
void refresh_window_and_fonts(Window& w, Shell& shell, const ui::UiFonts& fonts, GuiFonts& f) {
  if (shell.presenter().fullscreen != w.fullscreen()) w.set_fullscreen(shell.presenter().fullscreen);
  if (fonts.fallback) {
    std::vector<char32_t> more = shell.document_panel().take_missing_glyphs();
    f.pending_glyphs.insert(f.pending_glyphs.end(), more.begin(), more.end());
  }
  const auto now = std::chrono::steady_clock::now();
  const bool add_glyphs = !f.pending_glyphs.empty() && now - f.last_glyph_rebuild >= std::chrono::milliseconds(500);
  if (add_glyphs) {
    f.extra_glyphs.insert(f.extra_glyphs.end(), f.pending_glyphs.begin(), f.pending_glyphs.end());
    f.pending_glyphs.clear();
    f.last_glyph_rebuild = now;
  }
  if (shell.presenter().ui_scale != f.applied_ui_scale || add_glyphs) {
    f.applied_ui_scale = shell.presenter().ui_scale;
    ImGui::GetIO().Fonts->Clear();
    shell.set_fonts(ui::load_fonts(15.f, f.scale * f.applied_ui_scale, f.extra_glyphs));
    w.reload_fonts();
    setup_style(f.scale * f.applied_ui_scale);
  }
}

// What a scripted run has done so far (--quit, --screenshot, --export, a tour export).
struct ScriptState {
  int frames_ready = 0, tour_frames = 0, tour_written = 0;
  bool exported = false;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Tour export: every stop as a slide. Once the stop is on screen and both sides idle, a few
// frames for textures and layout, then the screenshot and the next stop. Returns false when
// the run ends (every stop written, or a problem: rc set).
bool tour_export_frame(const GuiOptions& o, Shell& shell, const GuiModels& m, const PublishedView& s, int fw, int fh,
                       std::ostream& log, ScriptState& st, int& rc) {
  const bool idle = !m.control->busy() && (!m.worker_b || !m.worker_b->busy());
  if (shell.tour_stop_shown(s) && idle) ++st.tour_frames;
  else st.tour_frames = 0;
  if (shell.has_popup() || !shell.tour().active()) {
    for (const auto& e : shell.pending_errors()) std::fprintf(stderr, "mnemoscope: error: %s\n", e.c_str());
    rc = 1;
    return false;
  }
  if (st.tour_frames == 5) {
    char name[32];
    std::snprintf(name, sizeof name, "/stop-%02d.png", shell.tour().index() + 1);
    const std::string path = o.tour_export_dir + name;
    try {
      write_screenshot(path, fw, fh);
      log << "stop " << shell.tour().index() + 1 << " of " << shell.tour().count() << " -> " << path << "\n";
      ++st.tour_written;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnemoscope: error: %s\n", e.what());
      rc = write_failure_code(e);
      return false;
    }
    st.tour_frames = 0;
    if (shell.tour().index() + 1 >= shell.tour().count()) return false;
    shell.tour().next();
  }
  if (ms_since(st.started) > 600000.0) {
    std::fprintf(stderr, "mnemoscope: error: the tour's stops did not all show within 600 s (%d written)\n", st.tour_written);
    rc = 1;
    return false;
  }
  return true;
}

// --screenshot and --export, a few frames after the last step arrived (so textures, tables
// and layout settle). Returns false when a scripted run (--quit) ends.
bool capture_frame(const GuiOptions& o, Shell& shell, const ViewPtr& s, bool ready, bool scripted, int fw, int fh,
                   std::ostream& log, ScriptState& st, int& rc) {
  const bool timed_out = ms_since(st.started) > 300000.0;
  if (ready || timed_out) ++st.frames_ready;
  if (st.frames_ready != 4) return true;
  if (timed_out && !ready) {
    std::fprintf(stderr, "mnemoscope: the steps did not finish within 300 s; taking the screenshot anyway\n");
    rc = 1;
  }
  if (!o.screenshot.empty()) {
    try {
      write_screenshot(o.screenshot, fw, fh);
      log << "screenshot " << fw << "x" << fh << " -> " << o.screenshot << "\n";
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnemoscope: error: %s\n", e.what());
      rc = write_failure_code(e);
    }
  }
  if (!o.export_dir.empty() && !st.exported) {
    st.exported = true;
    const ExportRequest req = shell.export_request(PanelId::kControls, s, o.export_dir);
    try {
      auto paths = export_panel(req);
      log << "exported " << paths.size() << " files to " << o.export_dir << "\n";
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mnemoscope: error: export: %s\n", e.what());
      rc = write_failure_code(e);
    }
  }
  log.flush();
  return !scripted;
}

// The window loop: fonts, the models' news, one frame, and what a scripted run writes; until
// the window closes, the app quits, a signal arrives or a scripted run is done.
int run_loop(const GuiOptions& o, Window& w, Shell& shell, const ui::UiFonts& fonts, GuiFonts& gf, GuiModels& m,
             std::ostream& log) {
  const bool tour_export = !o.tour_export_dir.empty();
  const bool scripted = o.quit || tour_export;
  ImGuiIO& io = ImGui::GetIO();
  int rc = 0;
  ScriptState st;
  bool selected = false;
  int64_t pending_token = o.select_token;  // --select-token, applied once a step is shown
  std::string shown_title;
  while (!w.should_close() && !shell.quit_requested() && !g_stop_signal) {
    refresh_window_and_fonts(w, shell, fonts, gf);
    follow_compare_request(o, shell, m);
    const bool ready =
        m.worker ? m.worker->finished() >= m.commands && !m.worker->busy() && (!m.worker_b || !m.worker_b->busy()) : true;
    // Sleep while nothing moves; the worker wakes the loop when it publishes. A followed
    // session is polled by the dashboard twice a second.
    if (scripted || shell.transport().playing || m.control->busy() || !ready) glfwPollEvents();
    else glfwWaitEventsTimeout(m.replay ? 0.5 : 0.25);
    report_model_errors(o, shell, m, scripted, rc);
    ViewPtr s = m.worker ? m.worker->latest() : m.replay->latest();
    if (const std::string title = window_title(*s); title != shown_title) {
      w.set_title(title);
      shown_title = title;
    }
    // (once the view model knows the step's slots, i.e. after a frame has shown it)
    if (!selected && o.select_slot >= 0 && s->step && shell.view_model().slots() > 0) {
      shell.view_model().select_slot(o.select_slot);
      selected = true;
    }
    if (pending_token >= 0 && s->step) {
      shell.document_panel().select_token(pending_token);
      pending_token = -1;  // once
    }
    w.new_frame();
    // Scripted runs ignore wherever the real pointer happens to be (a stray tooltip).
    if (o.mouse_x >= 0 && o.mouse_y >= 0) io.MousePos = ImVec2(o.mouse_x, o.mouse_y);
    else if (scripted) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGui::NewFrame();
    shell.frame(s, *m.control, m.worker_b ? m.worker_b->latest() : nullptr);
    ImGui::Render();
    int fw = 0, fh = 0;
    w.render(&fw, &fh);
    if (tour_export) {
      if (!tour_export_frame(o, shell, m, *s, fw, fh, log, st, rc)) break;
      w.swap();
      continue;
    }
    if (scripted || !o.screenshot.empty() || !o.export_dir.empty())
      if (!capture_frame(o, shell, s, ready, scripted, fw, fh, log, st, rc)) break;
    w.swap();
  }
  return rc;
}

}  // namespace

int run_gui(const GuiOptions& o, std::ostream& log) {
  Window w;
  std::string why;
  const bool scripted = o.quit || !o.tour_export_dir.empty();
  if (!w.open(o.width, o.height, "Mnemoscope", !scripted, &why)) {
    // The machine's display, not a bug: exit 2 with the fix, as when $DISPLAY is not set.
    std::fprintf(stderr,
                 "mnemoscope: error: the window cannot open (%s); run under a desktop session or xvfb-run -a, with "
                 "OpenGL 3 drivers installed (bash .ci/setup installs libgl1-mesa-dri), or use 'mnemoscope step' for "
                 "figures without a window\n",
                 why.c_str());
    return 2;
  }
  Settings settings(o.persist ? config_dir() : std::string());
  w.set_ini_path(settings.imgui_ini_path());
  GuiFonts gf;
  gf.scale = w.content_scale();
  gf.applied_ui_scale = std::max(1.f, std::min(2.5f, o.ui_scale));
  setup_style(gf.scale * gf.applied_ui_scale);
  const ui::UiFonts fonts = ui::load_fonts(15.f, gf.scale * gf.applied_ui_scale);
  if (!w.start_backends(&why)) {
    std::fprintf(stderr, "mnemoscope: error: %s\n", why.c_str());
    return 1;
  }

  auto textures = std::make_unique<GlTextureApi>();
  auto shell = std::make_unique<Shell>(textures.get(), fonts, &settings, &log);
  g_drop_target = shell.get();
  glfwSetDropCallback(w.handle(), on_drop);
  shell->model_picker().set_zoo(zoo_catalog(o.zoo_dir), o.zoo_dir);
  if (o.model_picker) shell->request_model_picker();
  shell->set_tours(o.tours, o.zoo_dir);
  shell->presenter().ui_scale = gf.applied_ui_scale;
  shell->presenter().fullscreen = o.presenter;
  shell->presenter().high_contrast = o.high_contrast;
  shell->document_panel().set_tint(o.tint);
  if (o.gallery) shell->set_panel_open(PanelId::kGallery, true);
  if (o.gallery_size >= 0) shell->gallery().set_size(o.gallery_size);
  int rc = 0;
  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  auto old_hup = std::signal(SIGHUP, on_stop_signal);  // the terminal closed: save the layout and go
  if (old_hup == SIG_IGN) std::signal(SIGHUP, SIG_IGN);  // under nohup: keep running
  {
    GuiModels m;
    start_models(o, *shell, log, m);
    log.flush();
    if (!o.tour.empty()) {
      try {
        shell->start_tour(load_tour(o.tour, o.zoo_dir));
      } catch (const std::exception& e) {
        shell->push_error(e.what());  // (tour export: the loop reports it and stops)
      }
    }
    rc = run_loop(o, w, *shell, fonts, gf, m, log);
    g_drop_target = nullptr;
  }  // the worker stops (a running jump is cancelled) before the window goes
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  std::signal(SIGHUP, old_hup);
  shell.reset();
  textures.reset();
  return rc;
}

}  // namespace mnemo::app
