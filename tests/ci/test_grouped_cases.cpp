// Cases that the grouped-run self-test (tests/ci/grouped_run.sh, ctest grouped_run_reports_each_case)
// runs with --no-skip: one passes, one fails, one skips, one ends the process, one is never
// reached. They are decorated doctest::skip(), so no other run starts them, and ctest_cases.cmake
// registers no ctest test for them.
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

TEST_CASE("grouped run fixture: passes" * doctest::skip()) {
  std::cout << "printed by the passing case\n";
  CHECK(1 + 1 == 2);
}

TEST_CASE("grouped run fixture: fails" * doctest::skip()) {
  std::cout << "printed before the failure\n";
  std::fprintf(stderr, "written to stderr by the failing case\n");
  const int two = 2;
  CHECK(two == 3);
}

TEST_CASE("grouped run fixture: skips" * doctest::skip()) {
  MNEMO_SKIP("the fixture's reason to skip");
}

TEST_CASE("grouped run fixture: ends the process" * doctest::skip()) {
  if (!std::getenv("MNEMO_GROUPED_FIXTURE_EXIT")) return;
  std::cout << "printed before the exit" << std::endl;
  std::_Exit(0);  // what a crash or a stray exit leaves: no outcome, no end of the run
}

TEST_CASE("grouped run fixture: after the end" * doctest::skip()) {
  CHECK(true);
}
