// The IM_ASSERT handler of app/gui/panels/widgets/imgui_user_config.h.
#pragma once
#include <functional>
#include <string>

namespace mnemo::app::ui {

// Replaces what a failed IM_ASSERT does (nullptr restores the default: print and abort).
// Tests install a handler that records the failure; it must be set before any ImGui call
// and may be called from the thread that draws.
using AssertHandler = std::function<void(const std::string& expr, const char* file, int line)>;
void set_imgui_assert_handler(AssertHandler handler);

}  // namespace mnemo::app::ui
