// The GUI tests' shared prelude (tests/gui/): the headers every one of them included in the same
// order (LibTorch first: glog's CHECK clashes with doctest's), the null ImGui backend
// (tests/support/null_imgui.h) and waiting for the app's model worker. A GUI test file includes
// this, then its own app headers. Without the desktop app (MNEMO_GUI=OFF) only the helpers and
// doctest are included, and the files compile their non-GUI cases alone.
#pragma once
#include "tests/support/helpers.h"  // includes <torch/torch.h>
#ifdef MNEMO_WITH_GUI
#include "app/gui/model/worker.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/shell.h"
#include "tests/support/null_imgui.h"
#endif

#include <doctest/doctest.h>

#ifdef MNEMO_WITH_GUI
#include <imgui.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace mnemo::test {

// Waits until the worker has finished at least `n` jobs and is idle, polling every 5 ms for at
// most `limit`; the test REQUIREs the jobs done (a worker that hangs fails the test instead of
// hanging it). Each GUI test file used to define this under its own name (wait_idle, wait_for,
// wait_until, wait_for_jobs) so that two files in one unity batch would not define one name twice.
inline void wait_worker(app::Worker& w, int64_t n, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto t0 = std::chrono::steady_clock::now();
  while ((w.finished() < n || w.busy()) && std::chrono::steady_clock::now() - t0 < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(w.finished() >= n);
}

}  // namespace mnemo::test
#endif  // MNEMO_WITH_GUI
