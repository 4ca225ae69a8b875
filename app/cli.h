// The mnemoscope command line: subcommands info, step, export-weights, bench, demo.
// Bad user input exits 2 with a message naming the flag or file, and writes nothing.
#pragma once
#include <stdexcept>
#include <string>

namespace mnemo::app {

// A problem with what the user passed; printed as "mnemoscope: error: ..." and exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int run_cli(int argc, char** argv);

// Locates a shipped asset (assets/<rel>): $MNEMO_ASSETS, then the source tree.
std::string find_asset(const std::string& rel);

}  // namespace mnemo::app
