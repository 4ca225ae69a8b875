// Skipped tests are reported as skipped, never as passed.
//
// A test that cannot run here (no GPU, no data set in the cache, no python3-torch) calls
// MNEMO_SKIP("why") and leaves. The test runner (tests/main.cpp) lists every skipped test
// with its reason at the end, and when every test case it ran was skipped it exits with
// kSkipExitCode, which CTest maps to "Skipped" (SKIP_RETURN_CODE) — so a ctest run of one
// test case per process reports the skip, and `.ci/run` counts and lists them.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

namespace mnemo::test {

constexpr int kSkipExitCode = 77;

struct SkippedTest {
  std::string test_case;
  std::string reason;
};

// Records that the running test case is skipped (the test must return right after).
void mark_skipped(const std::string& reason);

// Every skip recorded in this process, in order.
const std::vector<SkippedTest>& skipped_tests();

}  // namespace mnemo::test

// For tests that need a GPU: skipped without one — except when MNEMO_REQUIRE_CUDA is set
// (the GPU run, .ci/gpu), where a missing GPU is a failure: no GPU test may be skipped there.
#define MNEMO_SKIP_WITHOUT_CUDA(reason)                                             \
  do {                                                                              \
    if (::std::getenv("MNEMO_REQUIRE_CUDA")) {                                      \
      FAIL("MNEMO_REQUIRE_CUDA is set but CUDA cannot run here: " << (reason));     \
      return;                                                                       \
    }                                                                               \
    MNEMO_SKIP(reason);                                                             \
  } while (0)

// Marks the current test case as skipped with a reason and returns from it.
#define MNEMO_SKIP(reason)                  \
  do {                                      \
    ::mnemo::test::mark_skipped(reason);    \
    return;                                 \
  } while (0)
