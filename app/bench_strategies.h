// `mnemoscope bench training-strategies`: full BPTT, gradient checkpointing and MRBP
// (core/train/rollout.h) training the same model on the same rollout. Each strategy runs in
// a fresh child process (the same binary, started with the hidden --child flag) so that
// every peak-memory number is clean; the parent prints peak memory and time per rollout,
// relative to BPTT (papers/memformer.txt App. A, Table 3).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace mnemo::app {

struct BenchStrategiesOptions {
  std::string config;     // model config ("" = sessions/memformer-mnist.json)
  int64_t batch = 8;      // sequences per rollout
  int64_t horizon = 8;    // segments per rollout (time horizon)
  int64_t rollouts = 2;   // timed rollouts per child, after one untimed warm-up
  int64_t rounds = 2;     // children per strategy, interleaved (bptt, checkpoint, mrbp, bptt, ...);
                          // time = median over all timed rollouts, memory = largest peak
  int64_t threads = 0;    // LibTorch intra-op threads in the children; 0 = LibTorch's default
  std::string device = "cpu";                        // cpu | cuda
  std::string strategies = "bptt,checkpoint,mrbp";  // the first one is the baseline
  std::string child;      // hidden: run this one strategy and print one JSON line
};

// Adds the "training-strategies" subcommand to `bench`, bound to `o`; returns it.
CLI::App* add_bench_strategies_command(CLI::App* bench, BenchStrategiesOptions& o);

// Throws UsageError for invalid options. Returns the exit code.
int run_bench_strategies(const BenchStrategiesOptions& o, std::ostream& out);

}  // namespace mnemo::app
