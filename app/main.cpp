#include "app/cli/cli.h"
#include "app/commands/commands.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <sys/prctl.h>
#include <unistd.h>

namespace {
// Under xvfb-run (tests, headless exports, `tour --export`), the program ends with it: a
// `timeout` that kills xvfb-run would otherwise leave a window running on an X server nobody
// stops (SIGTERM: the app closes as on Ctrl+C). Only then: a window started from a shell must
// outlive it under nohup or disown. Done first thing, before any model loads, so xvfb-run
// cannot end unnoticed in between.
void exit_with_xvfb_run() {
  const pid_t parent = ::getppid();
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/comm", static_cast<int>(parent));
  FILE* f = std::fopen(path, "r");
  if (!f) return;
  char comm[32] = {0};
  const bool got = std::fgets(comm, sizeof comm, f) != nullptr;
  std::fclose(f);
  if (!got || std::strncmp(comm, "xvfb-run", 8) != 0) return;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) std::raise(SIGTERM);  // it ended before prctl took effect
}
}  // namespace

int main(int argc, char** argv) {
  exit_with_xvfb_run();
  mnemo::app::CommandTable table = mnemo::app::make_command_table();
  return mnemo::app::run_cli(argc, argv, table, std::cout, std::cerr);
}
