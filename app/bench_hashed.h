// `mnemoscope bench hashed-linear`: the MemoryFormer Memory Layer against a dense Linear of
// the same sizes, in one process (DESIGN §6). Prints FLOPs, wall time and ratios, and on
// CUDA the achieved memory bandwidth of the forward against the GPU's peak.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct BenchHashedOptions {
  std::vector<int64_t> tokens = {2048, 16384};  // rows N per call
  int64_t dim = 512;                            // d_in = d_out
  int64_t bits = 8;                             // tau (K = dim / tau tables)
  int64_t repeats = 7;                          // timed runs per case (median reported)
  double zipf = 1.1;                            // exponent of the skewed bucket load
  std::string device = "all";                   // cpu | cuda | all (cuda only when built with and present)
  // CPU only (app/bench_hashed_cpu.h):
  std::vector<int64_t> threads = {1, 2};             // LibTorch and OpenBLAS threads per run
  std::vector<std::string> tables = {"fp32", "bf16"};  // table dtypes of the hashed layer (fp32 | bf16 | fp16)
  std::string cpu_kernels = "auto";                  // auto | portable | avx2 | avx512
};

// Adds the "hashed-linear" subcommand (--tokens --dim --bits --repeats --zipf --device, and for
// the CPU --threads --tables --cpu-kernels) to `bench`, bound to `o`; returns it.
CLI::App* add_bench_hashed_command(CLI::App* bench, BenchHashedOptions& o);

// Throws UsageError for invalid options. Returns the exit code.
int run_bench_hashed(const BenchHashedOptions& o, std::ostream& out);

}  // namespace mnemo::app
