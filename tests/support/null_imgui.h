// An ImGui context with fonts built and no backend, for drawing panels and the shell in
// tests: IM_ASSERT throws ImGuiAssertFailure (so a contract violation fails the test instead of
// aborting), and frame() checks that the draw data a renderer would get is well-formed.
#pragma once
#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"

#include <doctest/doctest.h>
#include <imgui.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mnemo::test {

struct ImGuiAssertFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
  // One frame of the shell over a published view.
  template <class Shell, class View, class Controller>
  void frame(Shell& shell, const View& s, Controller& c) {
    frame([&] { shell.frame(s, c); });
  }

  app::ui::UiFonts fonts;
};

}  // namespace mnemo::test
