#include "app/figures_hash.h"

#include "app/cli_common.h"
#include "viz/export.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace mnemo::app {

namespace {

std::string fmt(double v, const char* f = "%.4f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

torch::Tensor counts_f64(const torch::Tensor& counts) {
  TORCH_CHECK(counts.defined() && counts.dim() == 2, "hash counts must be [K, 2^tau]");
  return counts.to(torch::kCPU, torch::kFloat64).contiguous();
}

void emit(const viz::Figure& fig, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  if (fm.png) {
    viz::write_png(fig, base + ".png", 2.0f);
    out.push_back(base + ".png");
  }
  if (fm.svg) {
    viz::write_svg(fig, base + ".svg");
    out.push_back(base + ".svg");
  }
}

}  // namespace

viz::HeatmapSpec hash_loads_spec(const std::string& path, const torch::Tensor& counts, const std::string& scope) {
  auto c = counts_f64(counts);
  const int64_t k = c.size(0), r = c.size(1);
  viz::HeatmapSpec s;
  s.title = "Hash bucket loads, " + path + " (" + std::to_string(k) + " tables x " + std::to_string(r) + " buckets, " +
            scope + ")";
  s.x_label = "bucket h(z)";
  s.y_label = "table k";
  s.colorbar_label = "load / uniform";
  s.rows = static_cast<int>(k);
  s.cols = static_cast<int>(r);
  s.values.reserve(static_cast<size_t>(k * r));
  const double* d = c.data_ptr<double>();
  for (int64_t i = 0; i < k; ++i) {
    double row_total = 0;
    for (int64_t b = 0; b < r; ++b) row_total += d[i * r + b];
    const double mean = row_total / static_cast<double>(r);
    for (int64_t b = 0; b < r; ++b) s.values.push_back(mean > 0 ? static_cast<float>(d[i * r + b] / mean) : 0.f);
    s.row_labels.push_back(std::to_string(i));
  }
  for (int64_t b = 0; b < r; ++b) s.col_labels.push_back(std::to_string(b));
  s.cmap = viz::Colormap::Diverging;
  s.vmin = 0.f;
  s.vmax = 2.f;
  return s;
}

viz::BarSpec hash_table_bars_spec(const std::string& path, const torch::Tensor& counts, int64_t table,
                                  const std::string& scope) {
  auto c = counts_f64(counts);
  const int64_t k = c.size(0), r = c.size(1);
  if (table < 0 || table >= k)
    throw std::out_of_range("hash table " + std::to_string(table) + " is not in 0.." + std::to_string(k - 1));
  auto row = c[table];
  const double total = row.sum().item<double>();
  viz::BarSpec s;
  s.title = "Bucket loads of table " + std::to_string(table) + ", " + path + " (" + scope + ", " +
            std::to_string(static_cast<int64_t>(total)) + " lookups)";
  s.x_label = "bucket h(z)";
  s.y_label = "lookups";
  const double* d = row.data_ptr<double>();
  for (int64_t b = 0; b < r; ++b) {
    s.labels.push_back(std::to_string(b));
    s.values.push_back(static_cast<float>(d[b]));
  }
  s.show_values = r <= 32;
  s.reference_line = static_cast<float>(total / static_cast<double>(r));
  return s;
}

viz::HistogramSpec hash_p_spec(const std::string& path, const torch::Tensor& p, const std::string& scope) {
  auto v = p.detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
  viz::HistogramSpec s;
  s.title = "p(z) of " + path + " (" + scope + ", all tables)";
  s.x_label = "p(z) = prod_i 1 / (1 + exp(-2|z_i| / t))";
  s.y_label = "lookups";
  s.samples.assign(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  s.bins = 40;
  s.lo = 0.f;
  s.hi = 1.f;
  return s;
}

std::vector<std::string> hash_stats_header() {
  return {"path", "table", "buckets", "lookups", "entropy", "dead_fraction", "max_load"};
}

std::vector<std::vector<std::string>> hash_stats_rows(const std::string& path, const HashStats& st) {
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& table, const HashTableStats& t) {
    rows.push_back({path, table, std::to_string(st.buckets), std::to_string(t.lookups), fmt(t.entropy),
                    fmt(t.dead_fraction), fmt(t.max_load)});
  };
  for (size_t i = 0; i < st.tables.size(); ++i) row(std::to_string(i), st.tables[i]);
  row("mean", st.mean());
  return rows;
}

viz::BarSpec hash_entropy_spec(const Trace& trace, const std::vector<std::string>& paths, const std::string& scope) {
  viz::BarSpec s;
  s.title = "Hash bucket entropy per projection (" + scope + ")";
  s.x_label = "projection";
  s.y_label = "normalised entropy, mean over tables (1 = uniform)";
  s.horizontal = true;
  for (const auto& p : paths) {
    s.labels.push_back(p);
    s.values.push_back(static_cast<float>(hash_stats(trace.at(hash_counts_key(p))).mean().entropy));
  }
  s.show_values = paths.size() <= 60;
  s.reference_line = 1.0f;
  return s;
}

std::vector<std::string> default_hash_detail_paths(const Trace& trace) {
  std::vector<std::string> out;
  std::vector<int64_t> seen;
  for (const auto& p : hash_paths(trace)) {
    const int64_t r = trace.at(hash_counts_key(p)).size(1);
    if (std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
    seen.push_back(r);
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> write_hash_figures(const Trace& trace, const std::string& dir, const FigureFormats& fm,
                                            const std::string& scope, std::vector<std::string> detail) {
  std::vector<std::string> out;
  const auto paths = hash_paths(trace);
  if (paths.empty()) return out;
  const std::string hdir = dir + "/hash";
  make_dirs(hdir);
  emit(viz::make_bars(hash_entropy_spec(trace, paths, scope)), hdir + "/entropy", fm, out);
  if (detail.empty()) detail = default_hash_detail_paths(trace);
  for (const auto& path : detail) {
    if (!trace.has(hash_counts_key(path))) continue;
    const auto& counts = trace.at(hash_counts_key(path));
    const std::string base = hdir + "/" + path;
    emit(viz::make_heatmap(hash_loads_spec(path, counts, scope)), base + ".loads", fm, out);
    emit(viz::make_bars(hash_table_bars_spec(path, counts, 0, scope)), base + ".table0", fm, out);
    if (trace.has(hash_p_key(path)))
      emit(viz::make_histogram(hash_p_spec(path, trace.at(hash_p_key(path)), scope)), base + ".p", fm, out);
  }
  if (fm.csv) {
    std::vector<std::vector<std::string>> stats_rows;
    for (const auto& path : paths) {
      const auto& counts = trace.at(hash_counts_key(path));
      auto c = counts.to(torch::kFloat32).contiguous();
      std::vector<float> vals(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
      std::vector<std::string> rl, cl;
      for (int64_t i = 0; i < c.size(0); ++i) rl.push_back("table " + std::to_string(i));
      for (int64_t b = 0; b < c.size(1); ++b) cl.push_back(std::to_string(b));
      viz::write_csv_matrix(hdir + "/" + path + ".loads.csv", static_cast<int>(c.size(0)), static_cast<int>(c.size(1)),
                            vals, rl, cl);
      out.push_back(hdir + "/" + path + ".loads.csv");
      auto rows = hash_stats_rows(path, hash_stats(counts));
      stats_rows.insert(stats_rows.end(), rows.begin(), rows.end());
    }
    viz::write_csv_table(hdir + "/stats.csv", hash_stats_header(), stats_rows);
    out.push_back(hdir + "/stats.csv");
  }
  return out;
}

bool write_hash_stats_csv(const HashStatsAccumulator& acc, const std::string& path) {
  if (acc.empty()) return false;
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : acc.paths()) {
    auto r = hash_stats_rows(p, acc.stats(p));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  viz::write_csv_table(path, hash_stats_header(), rows);
  return true;
}

}  // namespace mnemo::app
