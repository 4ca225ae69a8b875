// ImGui user config (IMGUI_USER_CONFIG, set by CMake for every target that includes imgui.h).
// Routes IM_ASSERT in our translation units to a handler that is active in Release builds
// too, so tests see a failed ImGui contract instead of it being compiled away by NDEBUG.
// (The asserts inside Debian's libimgui.a are compiled in and abort on their own.)
#pragma once

namespace mnemo::app::ui {
// Called by IM_ASSERT on failure; by default prints the expression and aborts.
void imgui_assert_failed(const char* expr, const char* file, int line);
}  // namespace mnemo::app::ui

#define IM_ASSERT(_EXPR) ((_EXPR) ? (void)0 : ::mnemo::app::ui::imgui_assert_failed(#_EXPR, __FILE__, __LINE__))
