#include "app/gui/platform/window.h"

#include "viz/export.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace mnemo::app {

namespace {
std::string g_glfw_error;
void on_glfw_error(int code, const char* text) { g_glfw_error = std::string(text) + " (GLFW error " + std::to_string(code) + ")"; }
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

Window::~Window() {
  if (gl_backend_) ImGui_ImplOpenGL3_Shutdown();
  if (glfw_backend_) ImGui_ImplGlfw_Shutdown();
  if (imgui_) ImGui::DestroyContext();
  if (win_) glfwDestroyWindow(win_);
  glfwTerminate();
}

bool Window::open(int w, int h, const char* title, bool vsync, std::string* why) {
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
  // ImGui draws 2D triangles in order: no depth or stencil buffer (each would cost 4 bytes per
  // pixel of the window, in GPU memory or, under a software GL, in the process's own memory).
  glfwWindowHint(GLFW_DEPTH_BITS, 0);
  glfwWindowHint(GLFW_STENCIL_BITS, 0);
  win_ = glfwCreateWindow(w, h, title, nullptr, nullptr);
  if (!win_) {
    *why = "cannot create an OpenGL 3.3 window: " + g_glfw_error;
    return false;
  }
  glfwMakeContextCurrent(win_);
  glfwSwapInterval(vsync ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  imgui_ = true;
  return true;
}

bool Window::start_backends(std::string* why) {
  glfw_backend_ = ImGui_ImplGlfw_InitForOpenGL(win_, true);
  gl_backend_ = glfw_backend_ && ImGui_ImplOpenGL3_Init("#version 150");
  if (!gl_backend_) *why = "cannot initialise the ImGui OpenGL 3 backend";
  return gl_backend_;
}

float Window::content_scale() const {
  float sx = 1.f, sy = 1.f;
  glfwGetWindowContentScale(win_, &sx, &sy);
  return std::max(1.f, std::min(3.f, std::max(sx, sy)));
}

void Window::set_ini_path(const std::string& path) {
  ini_path_ = path;
  ImGui::GetIO().IniFilename = ini_path_.empty() ? nullptr : ini_path_.c_str();
}

void Window::set_title(const std::string& title) { glfwSetWindowTitle(win_, title.c_str()); }

void Window::set_fullscreen(bool on) {
  if (!win_ || on == fullscreen_) return;
  if (on) {
    GLFWmonitor* mon = glfwGetPrimaryMonitor();
    const GLFWvidmode* mode = mon ? glfwGetVideoMode(mon) : nullptr;
    if (!mode) return;
    glfwGetWindowPos(win_, &saved_x_, &saved_y_);
    glfwGetWindowSize(win_, &saved_w_, &saved_h_);
    glfwSetWindowMonitor(win_, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
  } else {
    glfwSetWindowMonitor(win_, nullptr, saved_x_, saved_y_, std::max(320, saved_w_), std::max(240, saved_h_), GLFW_DONT_CARE);
  }
  fullscreen_ = on;
}

void Window::reload_fonts() {
  if (!gl_backend_) return;
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
  ImGui::GetIO().Fonts->ClearTexData();  // the GL texture has the pixels now
}

void Window::new_frame() {
  ImGui_ImplOpenGL3_NewFrame();
  // The first NewFrame uploads the font atlas to a GL texture; its CPU-side pixels (4 bytes per
  // texel) are not needed after that (a font reload builds them again, reload_fonts()).
  if (!fonts_uploaded_) {
    ImGui::GetIO().Fonts->ClearTexData();
    fonts_uploaded_ = true;
  }
  ImGui_ImplGlfw_NewFrame();
}

void Window::render(int* fb_w, int* fb_h) {
  glfwGetFramebufferSize(win_, fb_w, fb_h);
  glViewport(0, 0, *fb_w, *fb_h);
  glClearColor(0.09f, 0.09f, 0.10f, 1.f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void Window::swap() { glfwSwapBuffers(win_); }

bool Window::should_close() const { return glfwWindowShouldClose(win_); }

void setup_style(float scale) {
  ImGui::GetStyle() = ImGuiStyle();  // from the defaults: a second call (presenter's UI scale) must not compound
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

void write_screenshot(const std::string& path, int w, int h) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, px.data());
  // GL's origin is bottom-left: flip the rows in place (a second frame-sized buffer would add
  // w*h*3 bytes to the app's peak memory).
  const size_t stride = static_cast<size_t>(w) * 3;
  for (int y = 0; y < h / 2; ++y)
    std::swap_ranges(px.data() + static_cast<size_t>(y) * stride, px.data() + static_cast<size_t>(y + 1) * stride,
                     px.data() + static_cast<size_t>(h - 1 - y) * stride);
  std::string png;
  auto sink = [](void* ctx, void* data, int size) { static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<size_t>(size)); };
  if (!stbi_write_png_to_func(sink, &png, w, h, 3, px.data(), static_cast<int>(stride)))
    throw viz::ExportError(path, "PNG encoding failed");
  viz::write_file_atomic(path, png);
}

std::string gl_renderer() {
  const auto* r = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  return r ? r : "unknown";
}

}  // namespace mnemo::app
