#include "app/gui/app.h"

#include "app/cli.h"
#include "app/gui/export.h"
#include "app/gui/gl_textures.h"
#include "app/gui/settings.h"
#include "app/gui/shell.h"
#include "app/gui/synthetic.h"
#include "app/gui/replay.h"
#include "app/gui/worker.h"
#include "viz/export.h"
#include "viz/ui/fonts.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <csignal>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mnemo::app {

namespace {

std::string g_glfw_error;
void on_glfw_error(int code, const char* text) { g_glfw_error = std::string(text) + " (GLFW error " + std::to_string(code) + ")"; }

// Ctrl+C / SIGTERM close the window cleanly, so the layout (imgui.ini) is saved.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int) { g_stop_signal = 1; }

Shell* g_drop_target = nullptr;
void on_drop(GLFWwindow*, int count, const char** paths) {
  if (g_drop_target && count > 0 && paths && paths[0]) g_drop_target->drop_file(paths[0]);
}

// A GLFW window with an OpenGL 3.3 core context and ImGui set up on it; undone in reverse.
struct Window {
  GLFWwindow* win = nullptr;
  bool imgui = false, glfw_backend = false, gl_backend = false;
  std::string ini_path;

  ~Window() {
    if (gl_backend) ImGui_ImplOpenGL3_Shutdown();
    if (glfw_backend) ImGui_ImplGlfw_Shutdown();
    if (imgui) ImGui::DestroyContext();
    if (win) glfwDestroyWindow(win);
    glfwTerminate();
  }

  // Returns false (with *why) when no window can be made.
  bool open(int w, int h, const char* title, bool vsync, std::string* why) {
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit()) {
      *why = "glfwInit failed: " + g_glfw_error;
      return false;
    }
    if (w <= 0 || h <= 0) {
      // Fit the monitor's work area, at most 1920x1080 (the layout's design size).
      int mx = 0, my = 0, mw = 1920, mh = 1080;
      if (GLFWmonitor* m = glfwGetPrimaryMonitor()) glfwGetMonitorWorkarea(m, &mx, &my, &mw, &mh);
      w = std::min(1920, std::max(1280, mw * 9 / 10));
      h = std::min(1080, std::max(720, mh * 9 / 10));
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    win = glfwCreateWindow(w, h, title, nullptr, nullptr);
    if (!win) {
      *why = "cannot create an OpenGL 3.3 window: " + g_glfw_error;
      return false;
    }
    glfwMakeContextCurrent(win);
    glfwSwapInterval(vsync ? 1 : 0);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    imgui = true;
    return true;
  }

  // After fonts are added: backends (the OpenGL backend builds the font texture).
  bool start_backends(std::string* why) {
    glfw_backend = ImGui_ImplGlfw_InitForOpenGL(win, true);
    gl_backend = glfw_backend && ImGui_ImplOpenGL3_Init("#version 150");
    if (!gl_backend) *why = "cannot initialise the ImGui OpenGL 3 backend";
    return gl_backend;
  }
};

float content_scale(GLFWwindow* win) {
  float sx = 1.f, sy = 1.f;
  glfwGetWindowContentScale(win, &sx, &sy);
  return std::max(1.f, std::min(3.f, std::max(sx, sy)));
}

void setup_style(float scale) {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowRounding = 3.f;
  st.FrameRounding = 2.f;
  st.WindowPadding = ImVec2(8, 6);
  st.ItemSpacing = ImVec2(7, 5);
  st.WindowTitleAlign = ImVec2(0.02f, 0.5f);
  st.Colors[ImGuiCol_WindowBg].w = 1.f;  // opaque: a floating window (the gallery) must not show panels through it
  st.ScaleAllSizes(scale);
}

// Reads the back buffer and writes it as an RGB PNG (rows flipped: GL's origin is bottom-left).
void write_screenshot(const std::string& path, int w, int h) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, px.data());
  std::vector<uint8_t> flipped(px.size());
  const size_t stride = static_cast<size_t>(w) * 3;
  for (int y = 0; y < h; ++y)
    std::copy_n(px.data() + static_cast<size_t>(h - 1 - y) * stride, stride, flipped.data() + static_cast<size_t>(y) * stride);
  std::string png;
  auto sink = [](void* ctx, void* data, int size) { static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<size_t>(size)); };
  if (!stbi_write_png_to_func(sink, &png, w, h, 3, flipped.data(), static_cast<int>(stride)))
    throw viz::ExportError(path, "PNG encoding failed");
  viz::write_file_atomic(path, png);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the calling thread in ms (robust against other processes competing for cores).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Times the texture uploads of another TextureApi (bench ui splits its frame time).
class TimedTextures : public viz::ui::TextureApi {
 public:
  explicit TimedTextures(viz::ui::TextureApi* inner) : inner_(inner) {}
  ImTextureID create(int w, int h, const uint8_t* rgba, bool smooth) override {
    const auto t0 = std::chrono::steady_clock::now();
    ImTextureID id = inner_->create(w, h, rgba, smooth);
    ms += ms_since(t0);
    return id;
  }
  void update(ImTextureID id, int w, int h, const uint8_t* rgba) override {
    const auto t0 = std::chrono::steady_clock::now();
    inner_->update(id, w, h, rgba);
    ms += ms_since(t0);
  }
  void destroy(ImTextureID id) override { inner_->destroy(id); }
  int max_size() const override { return inner_->max_size(); }
  double ms = 0.0;

 private:
  viz::ui::TextureApi* inner_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

bool display_available(std::string* why) {
  const char* d = std::getenv("DISPLAY");
  const char* wl = std::getenv("WAYLAND_DISPLAY");
  if ((!d || !*d) && (!wl || !*wl)) {
    if (why) *why = "$DISPLAY is not set";
    return false;
  }
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    if (why) *why = "glfwInit failed: " + g_glfw_error;
    return false;
  }
  glfwTerminate();
  return true;
}

int run_gui(const GuiOptions& o, std::ostream& log) {
  Window w;
  std::string why;
  const bool scripted = o.quit;
  if (!w.open(o.width, o.height, "Mnemoscope", !scripted, &why)) {
    std::fprintf(stderr, "mnemoscope: error: %s\n", why.c_str());
    return 1;
  }
  Settings settings(o.persist ? config_dir() : std::string());
  w.ini_path = settings.imgui_ini_path();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = w.ini_path.empty() ? nullptr : w.ini_path.c_str();
  const float scale = content_scale(w.win);
  setup_style(scale);
  const viz::ui::UiFonts fonts = viz::ui::load_fonts(15.f, scale);
  if (!w.start_backends(&why)) {
    std::fprintf(stderr, "mnemoscope: error: %s\n", why.c_str());
    return 1;
  }

  auto textures = std::make_unique<GlTextureApi>();
  auto shell = std::make_unique<Shell>(textures.get(), fonts, &settings, &log);
  g_drop_target = shell.get();
  glfwSetDropCallback(w.win, on_drop);
  if (o.gallery) shell->set_panel_open(PanelId::kGallery, true);
  if (o.gallery_size >= 0) shell->gallery().set_size(o.gallery_size);
  int rc = 0;
  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  {
    // A live model (Worker) or a recorded session (ReplayController + dashboard).
    std::unique_ptr<Worker> worker;
    std::unique_ptr<ReplayController> replay;
    Controller* control = nullptr;
    int64_t commands = 0;
    if (!o.session.empty()) {
      replay = std::make_unique<ReplayController>(o.session);  // checked by the CLI before the window opened
      shell->open_dashboard(o.session, replay.get());
      if (!o.compare.empty()) shell->dashboard().compare_with(o.compare);
      for (int i = 0; i < o.steps; ++i) replay->step(+1);
      control = replay.get();
      log << "gui: replaying and following session " << o.session << "\n";
    } else {
      worker = std::make_unique<Worker>([] { glfwPostEmptyEvent(); });
      worker->start(o.doc, o.cfg, o.seed, o.checkpoint);
      for (int i = 0; i < o.steps; ++i) worker->step(+1);
      commands = 1 + o.steps;
      control = worker.get();
      log << "gui: " << o.doc << " (" << o.cfg.model << ", " << o.cfg.slots << " slots, segments of " << o.cfg.segment_len
          << " tokens)" << (o.steps ? ", stepping " + std::to_string(o.steps) + " segments" : std::string()) << "\n";
    }
    log.flush();

    int frames_ready = 0;
    bool selected = false, exported = false;
    const auto started = std::chrono::steady_clock::now();
    while (!glfwWindowShouldClose(w.win) && !shell->quit_requested() && !g_stop_signal) {
      const bool ready = worker ? worker->finished() >= commands && !worker->busy() : true;
      // Sleep while nothing moves; the worker wakes the loop when it publishes. A followed
      // session is polled by the dashboard twice a second.
      if (scripted || shell->transport().playing || control->busy() || !ready) glfwPollEvents();
      else glfwWaitEventsTimeout(replay ? 0.5 : 0.25);
      for (auto& e : worker ? worker->take_errors() : replay->take_errors()) {
        if (scripted) std::fprintf(stderr, "mnemoscope: %s\n", e.c_str());
        shell->push_error(e);
        if (scripted) rc = 1;
      }
      SessionPtr s = worker ? worker->latest() : replay->latest();
      // (once the view model knows the step's slots, i.e. after a frame has shown it)
      if (!selected && o.select_slot >= 0 && s->step && shell->view_model().slots() > 0) {
        shell->view_model().select_slot(o.select_slot);
        selected = true;
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      // Scripted runs ignore wherever the real pointer happens to be (a stray tooltip).
      if (o.mouse_x >= 0 && o.mouse_y >= 0) io.MousePos = ImVec2(o.mouse_x, o.mouse_y);
      else if (scripted) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
      ImGui::NewFrame();
      shell->frame(s, *control);
      ImGui::Render();
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(w.win, &fw, &fh);
      glViewport(0, 0, fw, fh);
      glClearColor(0.09f, 0.09f, 0.10f, 1.f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

      if (scripted || !o.screenshot.empty() || !o.export_dir.empty()) {
        // A few frames after the last step arrived, so textures, tables and layout settle.
        const bool timed_out = ms_since(started) > 300000.0;
        if (ready || timed_out) ++frames_ready;
        if (frames_ready == 4) {
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
              rc = 1;
            }
          }
          if (!o.export_dir.empty() && !exported) {
            exported = true;
            ExportRequest req;
            req.panel = PanelId::kControls;
            req.session = s;
            req.head = shell->view_model().head();
            req.thresholds = shell->view_model().thresholds();
            req.selected_slot = shell->view_model().selected_slot();
            req.attn_layer = shell->attention().layer_index();
            req.attn_head = shell->attention().head();
            req.hash_path = shell->hash_buckets().path();
            req.hash_table = shell->hash_buckets().table();
            req.dir = o.export_dir;
            try {
              auto paths = export_panel(req);
              log << "exported " << paths.size() << " files to " << o.export_dir << "\n";
            } catch (const std::exception& e) {
              std::fprintf(stderr, "mnemoscope: error: export: %s\n", e.what());
              rc = 1;
            }
          }
          log.flush();
          if (scripted) break;
        }
      }
      glfwSwapBuffers(w.win);
    }
    g_drop_target = nullptr;
  }  // the worker stops (a running jump is cancelled) before the window goes
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  shell.reset();
  textures.reset();
  return rc;
}

int run_bench_ui(const BenchUiOptions& o, std::ostream& out) {
  if (o.frames < 10 || o.slots < 1 || o.tokens < 1 || o.segments < 1 || o.change_every < 1)
    throw UsageError("bench ui: --frames >= 10 and every size >= 1");
  std::string why;
  if (!display_available(&why))
    throw UsageError("bench ui needs a display (" + why + "); run it as: xvfb-run -a -s \"-screen 0 1920x1080x24\" mnemoscope bench ui");
  // Two synthetic steps of the requested size; alternating them re-uploads every texture.
  SyntheticSpec spec;
  spec.slots = o.slots;
  spec.tokens = o.tokens;
  spec.visited = o.segments;
  spec.heads = 4;
  spec.dim = 64;
  SessionPtr a = make_synthetic_session(spec);
  spec.seed = 2;
  auto b_mut = std::make_shared<SessionView>(*make_synthetic_session(spec));
  b_mut->info = a->info;  // same document: only the step and the timeline change
  b_mut->version = 2;
  b_mut->visited_version = 2;
  SessionPtr b = b_mut;

  Window w;
  if (!w.open(1920, 1080, "Mnemoscope bench ui", false, &why)) throw UsageError("bench ui: " + why);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  setup_style(1.f);
  const viz::ui::UiFonts fonts = viz::ui::load_fonts(15.f, 1.f);
  if (!w.start_backends(&why)) throw UsageError("bench ui: " + why);
  const std::string renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  auto gl_textures = std::make_unique<GlTextureApi>();
  auto textures = std::make_unique<TimedTextures>(gl_textures.get());
  auto shell = std::make_unique<Shell>(textures.get(), fonts, nullptr, nullptr);
  const bool dash = o.dashboard_points > 0;
  if (dash) {
    const auto t0 = std::chrono::steady_clock::now();
    shell->dashboard().load_synthetic(4, o.dashboard_points);
    shell->set_panel_open(PanelId::kDashboard, true);
    out << "bench dashboard: 4 curves x " << o.dashboard_points << " points loaded in " << static_cast<int64_t>(ms_since(t0))
        << " ms\n";
  } else {
    shell->set_panel_open(PanelId::kGallery, true);
    shell->gallery().set_size(GalleryPanel::size_count() - 1);  // the largest synthetic size
  }
  RecordingController control;

  std::vector<double> ui_ms, frame_ms, change_ms, build_ms, upload_ms, submit_ms, cpu_ms;
  const int warmup = 5;
  for (int f = 0; f < o.frames + warmup; ++f) {
    glfwPollEvents();
    const bool change = f % o.change_every == 0;
    const SessionPtr& s = (f / o.change_every) % 2 == 0 ? a : b;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_ms();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // A mouse sweeping over the writer-attention map (or the dashboard's curves): hover
    // tests and tooltips every frame; the dashboard is also zoomed in and out by the wheel.
    if (dash) {
      io.MousePos = ImVec2(40.f + static_cast<float>((f * 11) % 1800), 640.f + static_cast<float>((f * 7) % 400));
      io.MouseWheel = f % 60 == 20 ? 1.f : (f % 60 == 50 ? -1.f : 0.f);
    } else {
      io.MousePos = ImVec2(560.f + static_cast<float>((f * 7) % 800), 120.f + static_cast<float>((f * 5) % 420));
    }
    textures->ms = 0.0;
    ImGui::NewFrame();
    shell->frame(s, control);
    ImGui::Render();
    const double built = ms_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(w.win, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.09f, 0.09f, 0.10f, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const double submit = ms_since(t1);
    const double ui = ms_since(t0);
    const double cpu = thread_cpu_ms() - c0;
    glFinish();
    const double total = ms_since(t0);
    glfwSwapBuffers(w.win);
    if (f < warmup) continue;
    ui_ms.push_back(ui);
    cpu_ms.push_back(cpu);
    frame_ms.push_back(total);
    build_ms.push_back(built - textures->ms);
    upload_ms.push_back(textures->ms);
    submit_ms.push_back(submit);
    if (change) change_ms.push_back(ui);
  }
  shell.reset();
  textures.reset();
  gl_textures.reset();

  char line[256];
  if (dash)
    out << "bench dashboard: " << o.frames << " frames at 1920x1080, training dashboard with 4 curves x "
        << o.dashboard_points << " points (NaN every 100,000) over the model panels, mouse hovering the curves\n";
  else
    out << "bench ui: " << o.frames << " frames at 1920x1080, all " << kPanelCount << " panels open (gallery at "
        << GalleryPanel::size_name(GalleryPanel::size_count() - 1) << ")\n";
  out
      << "  writer map " << o.slots << " slots x " << (1 + o.tokens + 1) << " columns (self | " << o.tokens
      << " tokens | cls), 4 heads; memory " << o.slots << " x 64; timeline " << o.slots << " x " << o.segments
      << " segments\n"
      << "  a new step every " << o.change_every << " frames (every texture re-uploaded), mouse moving over the "
      << (dash ? "curves\n" : "writer map\n")
      << "  OpenGL renderer: " << renderer << "\n";
  std::snprintf(line, sizeof line, "%-34s %9s %9s %9s\n", "", "p50 ms", "p99 ms", "max ms");
  out << line;
  auto row = [&](const char* name, const std::vector<double>& v) {
    std::snprintf(line, sizeof line, "%-34s %9.2f %9.2f %9.2f\n", name, percentile(v, 0.5), percentile(v, 0.99),
                  percentile(v, 1.0));
    out << line;
  };
  row("UI work (build + upload + submit)", ui_ms);
  row("  the same as UI-thread CPU time", cpu_ms);
  row("  ImGui frame (panels, no uploads)", build_ms);
  row("  texture uploads", upload_ms);
  row("  draw-list submit (GL calls)", submit_ms);
  row("  step-change frames only", change_ms);
  row("frame incl. GL raster (glFinish)", frame_ms);
  const double p99 = percentile(ui_ms, 0.99), p99_cpu = percentile(cpu_ms, 0.99);
  std::snprintf(line, sizeof line, "goal: p99 of UI work <= 16.7 ms: %s (wall %.2f ms, UI-thread CPU %.2f ms)\n",
                p99 <= 16.7 ? "met" : (p99_cpu <= 16.7 ? "met in CPU time, not in wall time (a loaded machine?)" : "NOT met"),
                p99, p99_cpu);
  out << line;
  std::snprintf(line, sizeof line, "machine: %u hardware threads, load average at the end: ", std::thread::hardware_concurrency());
  out << line;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    std::snprintf(line, sizeof line, "%.2f %.2f %.2f\n", load[0], load[1], load[2]);
    out << line;
  } else {
    out << "unknown\n";
  }
  return 0;
}

}  // namespace mnemo::app
