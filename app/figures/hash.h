// Figures of MemoryFormer hash tables (docs/models.md#memoryformer, "Trace"): every table's
// bucket loads as a heat strip, one table's bars against the uniform load, the distribution
// of p(z), the mean entropy of every projection, and the stats table. Built from HashData
// (app/figures/step_data.h) of one step, or of counts added over steps.
#pragma once
#include "app/figures/figures.h"

namespace mnemo::app {

// Heat strip: rows = the K tables, columns = the 2^tau buckets, colour = lookups / mean
// lookups of the table on a diverging map from 0 (dead, blue) through 1 (uniform, white) to
// >= 2 (red). `scope` names what was counted ("segment 3", "segments 0..7") for the title.
viz::HeatmapSpec hash_loads_spec(const HashPathData& p, const std::string& scope);
// One table's loads with the uniform load as the reference line. Throws InputError when
// `table` is not in 0..K-1.
viz::BarSpec hash_table_bars_spec(const HashPathData& p, int table, const std::string& scope);
// Distribution of p(z_k) over all rows and tables, on [0, 1].
viz::HistogramSpec hash_p_spec(const HashPathData& p, const std::string& scope);
// Mean normalised entropy of every projection as horizontal bars, uniform = 1 as reference.
viz::BarSpec hash_entropy_spec(const HashData& h, const std::string& scope);

// The stats table: path, table, buckets, lookups, entropy, dead_fraction, max_load; a row per
// table and a "mean" row per path (every column a mean over the tables, lookups too).
double hash_mean_lookups(const HashPathData& p);
std::string format_lookups(double v);  // "256", or "256.5" when not whole
// Why a projection's tables look alike, or "" when they do not: every table has the same
// loads (largest first, empty buckets left out), and then whether those loads are exactly the
// counts of the distinct ids in `segment_ids` (the step's tokens) - the buckets follow the
// tokens' identity, as in memoryformer-lm's layer 0 where each table's input is the byte's
// embedding alone. The Hash buckets panel shows it above the stats table.
std::string hash_same_tables_note(const HashPathData& p, const std::vector<int64_t>& segment_ids);
std::vector<std::string> hash_stats_header();
std::vector<std::vector<std::string>> hash_stats_rows(const HashPathData& p);

// The projections drawn in detail by default: for each distinct bucket count 2^tau, the
// first path (sorted) with it — e.g. one attention projection and the memory block's second layer.
std::vector<std::string> default_hash_detail_paths(const HashData& h);

// `mnemoscope step`: into dir/hash/ (created) entropy, and P.loads, P.table0, P.p for each
// detail path (empty = the default ones); with csv, stats.csv and P.loads.csv (raw counts)
// of every path. Nothing (and no directory) when there are no hashed projections.
void write_hash_figures(const HashData& h, const std::string& dir, const FigureFormats& fm, const std::string& scope,
                        std::vector<std::string>& out, std::vector<std::string> detail = {});
// The Hash buckets panel's export: P.loads, P.table<table>, P.p of one projection (base =
// prefix + "-" + path) and the stats of every projection as stats_csv.
void write_hash_projection(const HashData& h, const std::string& path, int table, const std::string& base,
                           const std::string& stats_csv, const std::string& scope, const FigureFormats& fm,
                           std::vector<std::string>& out);
// The stats table of every projection as CSV at `path` (nothing when h is empty).
void write_hash_stats_csv(const HashData& h, const std::string& path, std::vector<std::string>& out);

}  // namespace mnemo::app
