// Shared by the fuzz targets (fuzz/CMakeLists.txt): a property that must hold whatever the
// input is; a violation aborts, which libFuzzer reports as a crash with its input.
#pragma once
#include <cstdio>
#include <cstdlib>

#define FUZZ_REQUIRE(cond)                                                           \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
