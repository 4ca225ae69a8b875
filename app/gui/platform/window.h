// app/gui/platform — the desktop app's platform layer: a GLFW window with an OpenGL 3.3 core
// context and Dear ImGui on it (this file), GL textures behind the panels' TextureApi
// (gl_textures.h), screenshots of the back buffer, and the settings directory (settings.h).
// It knows nothing of panels, sessions or models: the app (app/gui/app.h) and `bench ui`
// drive a frame loop over it.
#pragma once
#include <string>

struct GLFWwindow;

namespace mnemo::app {

// Whether a window can be opened: $DISPLAY or $WAYLAND_DISPLAY is set and glfwInit works.
// *why says what is missing otherwise.
bool display_available(std::string* why);

// A window with ImGui set up on it; everything is undone in reverse by the destructor.
// Usage: open(), add fonts to ImGui's atlas, start_backends(), then per frame new_frame(),
// ImGui::NewFrame() ... ImGui::Render(), render(), swap().
class Window {
 public:
  Window() = default;
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // w, h <= 0: fit the monitor's work area (at most 1920x1080, at least 1280x720). vsync off
  // for scripted runs and benchmarks. Returns false with *why when no window can be made.
  bool open(int w, int h, const char* title, bool vsync, std::string* why);
  // After fonts are added (the OpenGL backend builds the font texture).
  bool start_backends(std::string* why);
  // The display's content scale (HiDPI), clamped to 1..3.
  float content_scale() const;
  // imgui.ini location ("" = none); must outlive the ImGui context (kept here).
  void set_ini_path(const std::string& path);
  void set_title(const std::string& title);
  // Full screen on the primary monitor, or back to the window's previous place and size.
  void set_fullscreen(bool on);
  bool fullscreen() const { return fullscreen_; }
  // After the font atlas changed (presenter mode's UI scale): uploads it again.
  void reload_fonts();

  void new_frame();  // backends' NewFrame (call before ImGui::NewFrame)
  // Clears and draws ImGui's draw data; returns the framebuffer size.
  void render(int* fb_w, int* fb_h);
  void swap();
  bool should_close() const;
  GLFWwindow* handle() const { return win_; }

 private:
  GLFWwindow* win_ = nullptr;
  bool imgui_ = false, glfw_backend_ = false, gl_backend_ = false;
  bool fonts_uploaded_ = false;  // the font atlas is on the GPU and its CPU pixels freed
  std::string ini_path_;
  bool fullscreen_ = false;
  int saved_x_ = 0, saved_y_ = 0, saved_w_ = 0, saved_h_ = 0;
};

// The app's ImGui style at `scale` (dark, opaque windows).
void setup_style(float scale);

// Reads the back buffer (w x h) and writes it as an RGB PNG, atomically. Throws
// viz::ExportError naming the path.
void write_screenshot(const std::string& path, int w, int h);

// The renderer's name (GL_RENDERER), for benchmark reports.
std::string gl_renderer();

}  // namespace mnemo::app
