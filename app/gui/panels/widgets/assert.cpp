#include "app/gui/panels/widgets/assert.h"

#include "app/gui/panels/widgets/imgui_user_config.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace mnemo::app::ui {

namespace {
std::mutex g_mutex;
AssertHandler g_handler;
}  // namespace

void set_imgui_assert_handler(AssertHandler handler) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_handler = std::move(handler);
}

void imgui_assert_failed(const char* expr, const char* file, int line) {
  AssertHandler h;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    h = g_handler;
  }
  if (h) {
    h(expr, file, line);
    return;
  }
  std::fprintf(stderr, "mnemoscope: ImGui assertion failed: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace mnemo::app::ui
