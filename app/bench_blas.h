// `mnemoscope bench blas`: the BLAS this process loaded against the reference Netlib BLAS,
// in one run. The program re-executes itself twice (hidden --child): once as it is, once
// with LD_LIBRARY_PATH = --reference-dir so that the dynamic linker finds the reference
// libblas.so.3 first; each child names the BLAS it actually loaded (core/platform/blas.h
// probe) and measures
//   * the `bench step` workload: the demo Memformer stepping the sample document, tracing
//     off, ms per segment (median of passes);
//   * one training step of each --configs training config (sessions/*.json): wall and CPU
//     ms per optimizer step, median over --steps steps after one warm-up step;
// and the parent prints both columns and the ratio. --with "ARGS" also runs
// `mnemoscope bench ARGS` (e.g. "training-strategies --rounds 1") under each BLAS and
// prints its output. Children run with --threads (default 1).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct BenchBlasOptions {
  std::string configs;   // comma list of training configs
  int64_t steps = 5;     // timed training steps per config (after one warm-up)
  int64_t segments = 48, repeats = 3;  // the bench step workload
  int64_t threads = 1;
  std::string reference_dir = "/usr/lib/x86_64-linux-gnu/blas";
  std::vector<std::string> with;  // extra bench command lines run under both BLAS
  bool child = false;             // hidden
};

CLI::App* add_bench_blas_command(CLI::App* bench, BenchBlasOptions& o);
int run_bench_blas(const BenchBlasOptions& o, std::ostream& out);

}  // namespace mnemo::app
