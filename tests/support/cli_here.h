// Running a `mnemoscope` command line inside the test process: the program's own app::run_cli
// with a new command table (what build/mnemoscope's main runs; main adds only the xvfb-run hook),
// as python/tests/cli_serve.cpp does for the Python tests. It saves the ~0.8 CPU s of LibTorch
// start-up a process of the program costs, for tests that run a command dozens of times and
// check its exit status, messages and files. Tests about the process itself (signals, locks,
// kills, a FIFO, the environment) use test::run_cli, which starts the binary.
#pragma once
#include "app/cli/cli.h"
#include "app/commands/commands.h"
#include "tests/support/helpers.h"

#include <sstream>
#include <string>
#include <vector>

namespace mnemo::test {

// `args` as run_cli takes them, split at spaces (no quoting: paths without spaces); the output is
// the command's stderr, then its stdout (so a JSON line it prints last stays last).
inline CliRun run_cli_here(const std::string& args) {
  std::vector<std::string> words{"mnemoscope"};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  app::CommandTable table = app::make_command_table();
  CliRun r;
  r.code = app::run_cli(static_cast<int>(words.size()), argv.data(), table, out, err);
  r.output = err.str() + out.str();
  return r;
}

}  // namespace mnemo::test
