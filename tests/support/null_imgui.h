// An ImGui context with fonts built and no backend, for drawing panels and the shell in
// tests: IM_ASSERT throws ImGuiAssertFailure (so a contract violation fails the test instead of
// aborting), and frame() checks that the draw data a renderer would get is well-formed.
#pragma once
#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"

#include <doctest/doctest.h>
#include <imgui.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnemo::test {

struct ImGuiAssertFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The lines of a text log (NullImGui::logged_window), each without its leading spaces (ImGui
// indents a tree's rows).
inline std::vector<std::string> log_lines(const std::string& log) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at <= log.size()) {
    const size_t end = std::min(log.find('\n', at), log.size());
    const std::string line = log.substr(at, end - at);
    const size_t start = line.find_first_not_of(' ');
    lines.push_back(start == std::string::npos ? "" : line.substr(start));
    at = end + 1;
  }
  return lines;
}

class NullImGui {
 public:
  NullImGui(float w, float h) {
    app::ui::set_imgui_assert_handler([](const std::string& expr, const char* file, int line) {
      throw ImGuiAssertFailure("IM_ASSERT(" + expr + ") failed at " + file + ":" + std::to_string(line));
    });
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.LogFilename = nullptr;
    io.DisplaySize = ImVec2(w, h);
    io.DeltaTime = 1.f / 60.f;
    fonts = app::ui::load_fonts(15.f, 1.f);
    unsigned char* px = nullptr;
    int tw = 0, th = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &tw, &th);  // builds the atlas; no texture is made
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(intptr_t{1}));
  }
  ~NullImGui() {
    ImGui::DestroyContext();
    app::ui::set_imgui_assert_handler(nullptr);
  }
  NullImGui(const NullImGui&) = delete;
  NullImGui& operator=(const NullImGui&) = delete;

  // One frame: NewFrame, draw(), Render, then the draw data must be valid.
  template <class Draw>
  void frame(Draw&& draw) {
    ImGui::GetIO().DeltaTime = 1.f / 60.f;
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    ImDrawData* dd = ImGui::GetDrawData();
    REQUIRE(dd);
    CHECK(dd->Valid);
  }
  // One frame that draws `draw` in a window `title` at (0, 0) of `size`, the pointer at `mouse`,
  // and returns the text ImGui's log recorded meanwhile: each item's text and any tooltip, a line
  // per row, as LogToClipboard hands it to the clipboard. (ImGui measures text only inside a
  // frame, so a test that measures what it read back does so in another frame().)
  template <class Draw>
  std::string logged_window(const char* title, ImVec2 size, ImVec2 mouse, Draw&& draw) {
    ImGuiIO& io = ImGui::GetIO();
    std::string log;
    io.SetClipboardTextFn = [](void* user, const char* text) { *static_cast<std::string*>(user) += text ? text : ""; };
    io.ClipboardUserData = &log;
    io.MousePos = mouse;
    frame([&] {
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(size);
      ImGui::Begin(title);
      ImGui::LogToClipboard();
      draw();
      ImGui::LogFinish();
      ImGui::End();
    });
    io.ClipboardUserData = nullptr;
    return log;
  }
  // One frame of the shell over a published view.
  template <class Shell, class View, class Controller>
  void frame(Shell& shell, const View& s, Controller& c) {
    frame([&] { shell.frame(s, c); });
  }

  app::ui::UiFonts fonts;
};

}  // namespace mnemo::test
