// Bucket-load statistics of MemoryFormer hash tables (docs/models.md#memoryformer "Trace", §3.6).
//
// Trace keys of a hashed projection at module path P (see core/nn/hashed_linear.h):
//   hash.P.bucket [N, K] int32   bucket of each row in each table
//   hash.P.p      [N, K] float32 p(z_k)
//   hash.P.counts [K, 2^tau] int64 lookups per bucket (carries 2^tau, which bucket alone cannot)
// Statistics are computed from counts, so one step, a document and a training run use the
// same code: HashStatsAccumulator adds counts over steps.
#pragma once
#include "core/trace/tracer.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace mnemo {


// Module paths that have hash.P.counts in `trace`, sorted.
std::vector<std::string> hash_paths(const Trace& trace);

// bucket [N, K] int32/int64 -> counts [K, buckets] int64. Throws std::invalid_argument when
// a bucket is outside 0..buckets-1 or the shapes are wrong.
torch::Tensor bucket_counts(const torch::Tensor& bucket, int64_t buckets);

// Statistics of one table's bucket counts (R = 2^tau buckets).
struct HashTableStats {
  int64_t lookups = 0;        // sum of the counts
  double entropy = 0;         // -sum q log q / log R with q = count / lookups: 1 = uniform, 0 = one bucket (0 when no lookups)
  double dead_fraction = 0;   // buckets with no lookup / R (1 when no lookups)
  double max_load = 0;        // max count / mean count, mean = lookups / R: 1 = uniform (0 when no lookups)
};

struct HashStats {
  int64_t buckets = 0;                // R
  std::vector<HashTableStats> tables;  // one per table k
  // Means over tables of entropy, dead_fraction and max_load; lookups summed.
  HashTableStats mean() const;
};

// counts [K, R] (any integer or floating dtype, non-negative) -> statistics per table.
HashStats hash_stats(const torch::Tensor& counts);

// Adds bucket counts over steps (a document, a training run). Not thread-safe.
class HashStatsAccumulator {
 public:
  // Adds every hash.P.counts of `trace`; returns how many paths it added.
  int64_t add(const Trace& trace);
  // Adds counts [K, R] for `path`. Throws std::invalid_argument if the shape differs from
  // what was added for that path before.
  void add(const std::string& path, const torch::Tensor& counts);
  std::vector<std::string> paths() const;
  bool empty() const { return counts_.empty(); }
  // Throws std::out_of_range naming the path when absent.
  const torch::Tensor& counts(const std::string& path) const;
  HashStats stats(const std::string& path) const;
  int64_t steps() const { return steps_; }  // add(const Trace&) calls that added something
  void clear();

 private:
  std::map<std::string, torch::Tensor> counts_;
  int64_t steps_ = 0;
};

}  // namespace mnemo
