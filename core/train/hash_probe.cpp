#include "core/train/hash_probe.h"

#include "core/nn/hashed_linear.h"

#include <cstdio>

namespace mnemo {

HashStatsAccumulator probe_hash_counts(MemoryModelImpl& model, const TaskBatch& tb) {
  torch::NoGradGuard g;
  const bool was_training = model.is_training();
  model.eval();
  HashStatsAccumulator acc;
  Tracer tracer(TraceSpec::of({"hash.*"}));
  {
    HashTracingScope scope(model, &tracer);
    MemoryState mem = model.initial_memory(tb.examples);
    for (const auto& in : tb.segments) {
      tracer.clear();
      SegmentOutput out = model.step(in, mem, &tracer);
      acc.add(tracer.trace());
      mem = std::move(out.memory);
    }
  }
  if (was_training) model.train();
  return acc;
}

std::string hash_stats_csv_rows(int64_t step, const HashStatsAccumulator& acc) {
  std::string out;
  for (const auto& path : acc.paths()) {
    const HashStats st = acc.stats(path);
    const int64_t k = static_cast<int64_t>(st.tables.size());
    for (int64_t t : {int64_t{0}, k - 1}) {
      if (t < 0) continue;
      const auto& s = st.tables[static_cast<size_t>(t)];
      char buf[512];
      std::snprintf(buf, sizeof buf, "%lld,%s,%lld,%lld,%lld,%lld,%.6f,%.6f,%.4f\n", static_cast<long long>(step),
                    path.c_str(), static_cast<long long>(t), static_cast<long long>(k),
                    static_cast<long long>(st.buckets), static_cast<long long>(s.lookups), s.entropy, s.dead_fraction,
                    s.max_load);
      out += buf;
      if (k == 1) break;
    }
  }
  return out;
}

}  // namespace mnemo
