// `mnemoscope bench recording`: training step time with the default session recording (a
// metrics record per step, probe traces every train.record_every steps; core/train/recorder.h)
// against recording off, in one process, alternating blocks of steps so drift hits both.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace mnemo::app {

struct BenchRecordingOptions {
  std::string config;        // training config ("" = sessions/copy-rmt.json)
  int64_t steps = 100;       // steps per timed block
  int64_t rounds = 3;        // blocks per mode, interleaved (off, on, off, on, ...)
  int64_t record_every = 0;  // 0 = the config's train.record_every
  int64_t threads = 1;       // LibTorch intra-op threads
};

CLI::App* add_bench_recording_command(CLI::App* bench, BenchRecordingOptions& o);
// Throws UsageError for invalid options. Returns the exit code.
int run_bench_recording(const BenchRecordingOptions& o, std::ostream& out);

}  // namespace mnemo::app
