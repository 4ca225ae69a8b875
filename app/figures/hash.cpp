#include "app/figures/hash.h"

#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "viz/export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace mnemo::app {

namespace {

std::string fmt4(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

const HashPathData* find_path(const HashData& h, const std::string& path) {
  for (const auto& p : h.paths)
    if (p.path == path) return &p;
  return nullptr;
}

}  // namespace

viz::HeatmapSpec hash_loads_spec(const HashPathData& p, const std::string& scope) {
  viz::HeatmapSpec s;
  s.title = "Hash bucket loads, " + p.path + " (" + std::to_string(p.tables) + " tables x " + std::to_string(p.buckets) +
            " buckets, " + scope + ")";
  s.x_label = "bucket h(z)";
  s.y_label = "table k";
  s.colorbar_label = "load / uniform";
  s.rows = p.tables;
  s.cols = p.buckets;
  s.values = p.load;
  for (int i = 0; i < p.tables; ++i) s.row_labels.push_back(std::to_string(i));
  for (int b = 0; b < p.buckets; ++b) s.col_labels.push_back(std::to_string(b));
  s.cmap = viz::Colormap::Diverging;
  s.vmin = 0.f;
  s.vmax = 2.f;
  return s;
}

viz::BarSpec hash_table_bars_spec(const HashPathData& p, int table, const std::string& scope) {
  if (table < 0 || table >= p.tables)
    throw InputError("hash table " + std::to_string(table) + " is not in 0.." + std::to_string(p.tables - 1));
  const int64_t total = p.lookups[static_cast<size_t>(table)];
  viz::BarSpec s;
  s.title = "Bucket loads of table " + std::to_string(table) + ", " + p.path + " (" + scope + ", " + std::to_string(total) +
            " lookups)";
  s.x_label = "bucket h(z)";
  s.y_label = "lookups";
  for (int b = 0; b < p.buckets; ++b) {
    s.labels.push_back(std::to_string(b));
    s.values.push_back(p.counts[static_cast<size_t>(table) * static_cast<size_t>(p.buckets) + static_cast<size_t>(b)]);
  }
  s.show_values = p.buckets <= 32;
  s.reference_line = static_cast<float>(static_cast<double>(total) / p.buckets);
  return s;
}

viz::HistogramSpec hash_p_spec(const HashPathData& p, const std::string& scope) {
  viz::HistogramSpec s;
  s.title = "p(z) of " + p.path + " (" + scope + ", all tables)";
  s.x_label = "p(z) = prod_i 1 / (1 + exp(-2|z_i| / t))";
  s.y_label = "lookups";
  s.samples = p.p;
  s.bins = HashPathData::kPBins;
  s.lo = 0.f;
  s.hi = 1.f;
  return s;
}

viz::BarSpec hash_entropy_spec(const HashData& h, const std::string& scope) {
  viz::BarSpec s;
  s.title = "Hash bucket entropy per projection (" + scope + ")";
  s.x_label = "projection";
  s.y_label = "normalised entropy, mean over tables (1 = uniform)";
  s.horizontal = true;
  for (const auto& p : h.paths) {
    s.labels.push_back(p.path);
    s.values.push_back(static_cast<float>(p.mean_entropy));
  }
  s.show_values = h.paths.size() <= 60;
  s.reference_line = 1.0f;
  return s;
}

std::vector<std::string> hash_stats_header() {
  return {"path", "table", "buckets", "lookups", "entropy", "dead_fraction", "max_load"};
}

double hash_mean_lookups(const HashPathData& p) {
  if (p.lookups.empty()) return 0.0;
  double total = 0;
  for (int64_t l : p.lookups) total += static_cast<double>(l);
  return total / static_cast<double>(p.lookups.size());
}

std::string format_lookups(double v) {
  char buf[64];
  if (v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::vector<std::vector<std::string>> hash_stats_rows(const HashPathData& p) {
  std::vector<std::vector<std::string>> rows;
  for (int k = 0; k < p.tables; ++k) {
    const size_t i = static_cast<size_t>(k);
    rows.push_back({p.path, std::to_string(k), std::to_string(p.buckets), std::to_string(p.lookups[i]), fmt4(p.entropy[i]),
                    fmt4(p.dead_fraction[i]), fmt4(p.max_load[i])});
  }
  // Every column of the "mean" row is a mean over the tables, lookups too (each table sees
  // every row once, so it equals any table's count).
  rows.push_back({p.path, "mean", std::to_string(p.buckets), format_lookups(hash_mean_lookups(p)), fmt4(p.mean_entropy),
                  fmt4(p.mean_dead), fmt4(p.mean_max_load)});
  return rows;
}

std::string hash_same_tables_note(const HashPathData& p, const std::vector<int64_t>& segment_ids) {
  const size_t K = static_cast<size_t>(std::max(0, p.tables)), R = static_cast<size_t>(std::max(0, p.buckets));
  if (K < 2 || R == 0 || p.counts.size() != K * R) return "";
  // Each table's loads, largest first, without the empty buckets.
  auto sorted_loads = [&](size_t k) {
    std::vector<float> v;
    for (size_t b = 0; b < R; ++b)
      if (p.counts[k * R + b] > 0) v.push_back(p.counts[k * R + b]);
    std::sort(v.rbegin(), v.rend());
    return v;
  };
  const std::vector<float> first = sorted_loads(0);
  for (size_t k = 1; k < K; ++k)
    if (sorted_loads(k) != first) return "";
  bool same_buckets = true;  // not only the same loads but in the same buckets
  for (size_t k = 1; k < K && same_buckets; ++k)
    same_buckets = std::equal(p.counts.begin(), p.counts.begin() + static_cast<std::ptrdiff_t>(R),
                              p.counts.begin() + static_cast<std::ptrdiff_t>(k * R));
  std::string note = "All " + std::to_string(K) + " tables have the same loads" +
                     (same_buckets ? std::string(", bucket for bucket") : std::string(" in a different bucket order")) +
                     ", so their statistics below are equal.";
  // Do the loads follow the tokens' identity? The segment's token counts, largest first.
  std::map<int64_t, float> per_id;
  for (int64_t id : segment_ids) per_id[id] += 1.f;
  std::vector<float> id_counts;
  for (const auto& e : per_id) id_counts.push_back(e.second);
  std::sort(id_counts.rbegin(), id_counts.rend());
  if (!segment_ids.empty() && id_counts == first)
    note += " Each table's loads are exactly the segment's token counts (" + std::to_string(id_counts.size()) +
            " distinct tokens, as many buckets used): the buckets follow the tokens' identity, as when a projection's "
            "input is each token's embedding alone (a first layer).";
  return note;
}

std::vector<std::string> default_hash_detail_paths(const HashData& h) {
  std::vector<std::string> out;
  std::vector<int> seen;
  for (const auto& p : h.paths) {  // h.paths is sorted by path
    if (std::find(seen.begin(), seen.end(), p.buckets) != seen.end()) continue;
    seen.push_back(p.buckets);
    out.push_back(p.path);
  }
  return out;
}

void write_hash_stats_csv(const HashData& h, const std::string& path, std::vector<std::string>& out) {
  if (h.empty()) return;
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : h.paths) {
    auto r = hash_stats_rows(p);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  write_table(path, hash_stats_header(), rows, FigureFormats::all(), out);
}

void write_hash_figures(const HashData& h, const std::string& dir, const FigureFormats& fm, const std::string& scope,
                        std::vector<std::string>& out, std::vector<std::string> detail) {
  if (h.empty()) return;
  const std::string hdir = dir + "/hash";
  io::make_dirs(hdir);
  write_figure(viz::make_bars(hash_entropy_spec(h, scope)), hdir + "/entropy", fm, out);
  if (detail.empty()) detail = default_hash_detail_paths(h);
  for (const auto& path : detail) {
    const HashPathData* p = find_path(h, path);
    if (!p) continue;
    const std::string base = hdir + "/" + path;
    write_figure(viz::make_heatmap(hash_loads_spec(*p, scope)), base + ".loads", fm, out);
    write_figure(viz::make_bars(hash_table_bars_spec(*p, 0, scope)), base + ".table0", fm, out);
    if (!p->p.empty()) write_figure(viz::make_histogram(hash_p_spec(*p, scope)), base + ".p", fm, out);
  }
  if (fm.csv) {
    for (const auto& p : h.paths) {
      std::vector<std::string> rl, cl;
      for (int i = 0; i < p.tables; ++i) rl.push_back("table " + std::to_string(i));
      for (int b = 0; b < p.buckets; ++b) cl.push_back(std::to_string(b));
      viz::write_csv_matrix(hdir + "/" + p.path + ".loads.csv", p.tables, p.buckets, p.counts, rl, cl);
      out.push_back(hdir + "/" + p.path + ".loads.csv");
    }
    write_hash_stats_csv(h, hdir + "/stats.csv", out);
  }
}

void write_hash_projection(const HashData& h, const std::string& path, int table, const std::string& base,
                           const std::string& stats_csv, const std::string& scope, const FigureFormats& fm,
                           std::vector<std::string>& out) {
  if (h.empty()) return;
  const HashPathData* p = find_path(h, path);
  if (!p) p = &h.paths.front();
  const std::string pb = base + "-" + p->path;
  write_heatmap(hash_loads_spec(*p, scope), pb + ".loads", fm, out);
  const int t = std::max(0, std::min(table, p->tables - 1));
  write_figure(viz::make_bars(hash_table_bars_spec(*p, t, scope)), pb + ".table" + std::to_string(t), fm, out);
  if (!p->p.empty()) write_figure(viz::make_histogram(hash_p_spec(*p, scope)), pb + ".p", fm, out);
  if (fm.csv) write_hash_stats_csv(h, stats_csv, out);
}

}  // namespace mnemo::app
