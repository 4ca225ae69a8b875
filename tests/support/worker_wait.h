// Waiting for the app's worker thread (app/gui/model/worker.h) in tests: shared, so that
// unity batches of the GUI tests never hold two copies.
#pragma once
#include "app/gui/model/worker.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace mnemo::test {

// Waits (up to 120 s) until `w` finished at least n commands and is idle; fails the test otherwise.
inline void wait_idle(app::Worker& w, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  while ((w.finished() < n || w.busy()) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(w.finished() >= n);
}

}  // namespace mnemo::test
