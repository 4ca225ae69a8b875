// The CPU part of `mnemoscope bench hashed-linear` (app/bench/hashed_linear.cpp): the Memory
// Layer against a dense torch Linear in one process, per thread count and table dtype, with
// the machine's measured memory bandwidth, the bytes each call must move and the achieved
// share of that bound (docs/benchmarks.md, "bench hashed-linear", explains the model).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app::bench {

struct HashedCpuOptions {
  std::vector<int64_t> tokens = {2048, 16384};           // rows N per call
  int64_t dim = 512, bits = 8, repeats = 7;              // d_in = d_out, tau, timed runs per case
  double zipf = 1.1;                                     // exponent of the skewed bucket load
  std::vector<int64_t> threads = {1, 2};                 // LibTorch and OpenBLAS threads per run
  std::vector<std::string> tables = {"fp32", "bf16"};    // table dtypes of the hashed layer: fp32 | bf16 | fp16
  std::string cpu_kernels = "auto";                      // auto | portable | avx2 | avx512
  // Tables kept packed in the kernels' layout between calls (PackedTablesCache): "on" (the
  // forward reuses one packed copy, as when stepping or evaluating; fwd+bwd packs once per
  // call, as after every optimizer step) and/or "off" (packed inside every call).
  std::vector<std::string> table_cache = {"on", "off"};
  std::vector<std::string> passes = {"forward", "fwd+bwd"};  // forward | fwd+bwd
  std::vector<std::string> loads = {"uniform", "zipf"};      // uniform | zipf
  // The same layer in PyTorch ops (mnemoscope.models.HashedProjection, app/bench/python/
  // hashed_eager.py) on the same tables and inputs: fp32 tables, uniform loads, every thread
  // count, token count and pass run; its output compared with the kernel's.
  bool against_python = false;
  std::string python = "/usr/bin/python3";  // Debian's, with python3-torch
};

// Memory bandwidth in GB/s (10^9 bytes/s), STREAM convention (bytes the loop's arrays hold,
// no write-allocate traffic), best of a few passes over arrays much larger than the caches.
struct StreamBandwidth {
  double read = 0, copy = 0, triad = 0;
};
StreamBandwidth measure_stream_bandwidth(int threads);

// The BLAS the dense baseline runs on: the shared libraries with "blas" or "mkl" in their
// name mapped into this process (resolved paths), plus openblas_get_config() when OpenBLAS
// is loaded. "none found" when nothing matches.
std::string loaded_blas();

// Throws UsageError naming the flag for invalid CPU options, and for an invalid
// MNEMO_CPU_KERNELS.
void validate_hashed_cpu_options(const HashedCpuOptions& o);

// Runs the CPU cases (threads x tables x tokens x passes x loads x table cache) and prints them
// to out; validates first. d_out = dim, d_in = K tau with K = dim / tau (so dim need not be a
// multiple of tau); the dense baseline is d_in -> d_out too.
void run_hashed_linear_cpu(const HashedCpuOptions& o, std::ostream& out);

}  // namespace mnemo::app::bench
