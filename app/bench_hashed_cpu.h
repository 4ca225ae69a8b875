// The CPU part of `mnemoscope bench hashed-linear` (app/bench_hashed.h): the Memory Layer
// against a dense torch Linear in one process, per thread count and table dtype, with the
// machine's measured memory bandwidth, the bytes each call must move and the achieved
// fraction of that bound (docs/benchmarks.md explains the model).
#pragma once
#include "app/bench_hashed.h"

#include <ostream>
#include <string>

namespace mnemo::app {

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

// Runs the CPU cases of o (o.threads x o.tables x o.tokens) and prints them to out. Throws
// UsageError for invalid CPU options.
void run_bench_hashed_cpu(const BenchHashedOptions& o, std::ostream& out);

}  // namespace mnemo::app
