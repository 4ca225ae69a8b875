// Benchmarks: contender and baseline in one process, ratios printed (never timed tests).
#pragma once
#include <ostream>
#include <string>

namespace mnemo::app {

struct BenchStepOptions {
  std::string config, doc;
  int64_t segments = 48;
  int64_t repeats = 7;
};
// ms per segment for the demo config with tracing off, writer-only and everything.
int run_bench_step(const BenchStepOptions& o, std::ostream& out);

}  // namespace mnemo::app
