// `mnemoscope train` as a function, for presets that train several configs the same way
// (app/commands/mtn_qa.cpp). See app/commands/train.cpp for what a run writes.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct TrainOptions {
  std::string config, out, sessions;
  int64_t steps = 0;
  bool steps_override = false;    // use `steps` (set by callers without a command line)
  bool resume = false;
  int64_t hash_stats_every = 0;   // --hash-stats-every N: bucket statistics to DIR/hash_stats.csv
  std::vector<std::string> sets;  // --set key=value
  CLI::Option* o_steps = nullptr;
};

// Trains one session; returns the exit code (0, 1 non-finite loss, 130 interrupted).
// Throws UsageError / mnemo::Error for bad input before anything is written.
int run_train(const TrainOptions& c, std::ostream& out);

}  // namespace mnemo::app
