// Figures of MemoryFormer hash tables (DESIGN §3.4 "Trace"), built from the hash.* trace
// keys (core/trace/hash_stats.h) with the viz code; shared by the CLI and, later, the GUI.
#pragma once
#include "app/figures.h"
#include "core/trace/hash_stats.h"
#include "viz/charts.h"

#include <string>
#include <vector>

namespace mnemo::app {

// Heat strip of every table's bucket loads: rows = the K tables, columns = the 2^tau buckets,
// colour = lookups / mean lookups per bucket on a diverging map from 0 (dead, blue) through
// 1 (uniform, white) to >= 2 (red). counts [K, 2^tau]. `scope` names what was counted
// ("segment 3", "segments 0..7") for the title.
viz::HeatmapSpec hash_loads_spec(const std::string& path, const torch::Tensor& counts, const std::string& scope);

// Bucket loads of one table as bars with the uniform load (lookups / 2^tau) as the
// reference line. Throws std::out_of_range when table is not in 0..K-1.
viz::BarSpec hash_table_bars_spec(const std::string& path, const torch::Tensor& counts, int64_t table,
                                  const std::string& scope);

// Distribution of p(z_k) over all rows and tables, on [0, 1]. p [N, K].
viz::HistogramSpec hash_p_spec(const std::string& path, const torch::Tensor& p, const std::string& scope);

// The stats table: header and one row per (path, table) plus a "mean" row per path:
// path, table, buckets, lookups, entropy, dead_fraction, max_load.
std::vector<std::string> hash_stats_header();
std::vector<std::vector<std::string>> hash_stats_rows(const std::string& path, const HashStats& stats);

// Mean normalised entropy of each projection's tables as horizontal bars (one per path in
// `paths`), with the uniform value 1 as the reference line.
viz::BarSpec hash_entropy_spec(const Trace& trace, const std::vector<std::string>& paths, const std::string& scope);

// The projections write_hash_figures draws in detail by default: for each distinct bucket
// count 2^tau in the trace, the first path (sorted) with it, e.g. one attention projection
// and the Memory Block's second layer.
std::vector<std::string> default_hash_detail_paths(const Trace& trace);

// Writes into `dir`/hash/ (created) for the hash.* keys of `trace`:
//   entropy               bars of every projection's mean normalised entropy;
//   P.loads, P.table0, P.p for each P in `detail` (empty = default_hash_detail_paths):
//                         heat strip of all tables' loads, table 0's bars against the
//                         uniform line, histogram of p;
//   with csv: stats.csv (every path and table) and P.loads.csv (raw counts [K, 2^tau]) for
//   every path.
// Detail paths not in the trace are skipped. Returns the paths written; nothing (and no
// directory) when the trace has no hash keys.
std::vector<std::string> write_hash_figures(const Trace& trace, const std::string& dir, const FigureFormats& formats,
                                            const std::string& scope, std::vector<std::string> detail = {});

// The stats table of an accumulator (e.g. over the stepped segments) as CSV at `path`.
// Returns false (writes nothing) when the accumulator is empty.
bool write_hash_stats_csv(const HashStatsAccumulator& acc, const std::string& path);

}  // namespace mnemo::app
