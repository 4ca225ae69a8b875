// Bucket statistics of a model's hashed projections during training (the analogue of the
// MemoryFormer paper's Figure 4): a forward-only pass over a fixed batch with hash tracing,
// counts summed over its segments, and CSV rows for chosen tables.
#pragma once
#include "core/data/tasks.h"
#include "core/models/model.h"
#include "core/trace/hash_stats.h"

#include <string>

namespace mnemo {

// Runs `model` (no grad, eval mode, restored afterwards) over the segments of `tb`, carrying
// memory, and returns the bucket counts of every hashed projection (empty for a dense model).
HashStatsAccumulator probe_hash_counts(MemoryModelImpl& model, const TaskBatch& tb);

// Header of the CSV written by hash_stats_csv_rows.
inline constexpr const char* kHashStatsCsvHeader = "step,path,table,tables,buckets,lookups,entropy,dead_fraction,max_load";
// One row per path and table, for the first and last table of each path (table 0 and K-1;
// one row when K = 1), paths sorted; each line ends with '\n'.
std::string hash_stats_csv_rows(int64_t step, const HashStatsAccumulator& acc);

}  // namespace mnemo
