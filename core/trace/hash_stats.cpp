#include "core/trace/hash_stats.h"

#include <cmath>
#include <stdexcept>

namespace mnemo {

namespace {
constexpr const char* kCountsSuffix = ".counts";
}

std::vector<std::string> hash_paths(const Trace& trace) {
  std::vector<std::string> out;
  const std::string prefix = keys::kHashPrefix, suffix = kCountsSuffix;
  for (const auto& key : trace.keys_with_prefix(prefix)) {
    if (key.size() > prefix.size() + suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(key.substr(prefix.size(), key.size() - prefix.size() - suffix.size()));
  }
  return out;
}

torch::Tensor bucket_counts(const torch::Tensor& bucket, int64_t buckets) {
  if (!bucket.defined() || bucket.dim() != 2 || bucket.is_floating_point())
    throw std::invalid_argument("bucket_counts: bucket must be an integer [N, K] tensor");
  if (buckets < 1) throw std::invalid_argument("bucket_counts: buckets must be >= 1");
  torch::NoGradGuard g;
  const int64_t k = bucket.size(1);
  auto b = bucket.to(torch::kInt64);
  if (b.numel() > 0) {
    const int64_t lo = b.min().item<int64_t>(), hi = b.max().item<int64_t>();
    if (lo < 0 || hi >= buckets)
      throw std::invalid_argument("bucket_counts: bucket values " + std::to_string(lo) + ".." + std::to_string(hi) +
                                  " outside 0.." + std::to_string(buckets - 1));
  }
  // Flat index table * buckets + bucket, counted with one bincount.
  auto flat = b + torch::arange(k, b.options()).unsqueeze(0) * buckets;
  auto counts = torch::bincount(flat.reshape({-1}), /*weights=*/{}, /*minlength=*/k * buckets);
  return counts.view({k, buckets}).to(torch::kInt64);
}

HashTableStats HashStats::mean() const {
  HashTableStats m;
  if (tables.empty()) return m;
  for (const auto& t : tables) {
    m.lookups += t.lookups;
    m.entropy += t.entropy;
    m.dead_fraction += t.dead_fraction;
    m.max_load += t.max_load;
  }
  const double n = static_cast<double>(tables.size());
  m.entropy /= n;
  m.dead_fraction /= n;
  m.max_load /= n;
  return m;
}

HashStats hash_stats(const torch::Tensor& counts) {
  if (!counts.defined() || counts.dim() != 2) throw std::invalid_argument("hash_stats: counts must be [K, R]");
  torch::NoGradGuard g;
  auto c = counts.to(torch::kCPU, torch::kFloat64).contiguous();
  HashStats s;
  s.buckets = c.size(1);
  const double r = static_cast<double>(s.buckets);
  const double* data = c.data_ptr<double>();
  for (int64_t k = 0; k < c.size(0); ++k) {
    const double* row = data + k * s.buckets;
    double total = 0, mx = 0;
    int64_t dead = 0;
    for (int64_t b = 0; b < s.buckets; ++b) {
      if (row[b] < 0) throw std::invalid_argument("hash_stats: negative count");
      total += row[b];
      mx = std::max(mx, row[b]);
      dead += row[b] == 0;
    }
    HashTableStats t;
    t.lookups = static_cast<int64_t>(std::llround(total));
    t.dead_fraction = static_cast<double>(dead) / r;
    if (total > 0) {
      double h = 0;
      for (int64_t b = 0; b < s.buckets; ++b)
        if (row[b] > 0) h -= row[b] / total * std::log(row[b] / total);
      t.entropy = s.buckets > 1 ? h / std::log(r) : 1.0;
      t.max_load = mx / (total / r);
    }
    s.tables.push_back(t);
  }
  return s;
}

int64_t HashStatsAccumulator::add(const Trace& trace) {
  int64_t n = 0;
  for (const auto& path : hash_paths(trace)) {
    add(path, trace.at(keys::hash_counts_key(path)));
    ++n;
  }
  if (n > 0) ++steps_;
  return n;
}

void HashStatsAccumulator::add(const std::string& path, const torch::Tensor& counts) {
  if (!counts.defined() || counts.dim() != 2)
    throw std::invalid_argument("HashStatsAccumulator: counts of '" + path + "' must be [K, R]");
  torch::NoGradGuard g;
  auto c = counts.to(torch::kCPU, torch::kInt64);
  auto it = counts_.find(path);
  if (it == counts_.end()) {
    counts_[path] = c.clone();
    return;
  }
  if (it->second.sizes() != c.sizes())
    throw std::invalid_argument("HashStatsAccumulator: counts of '" + path + "' changed shape");
  it->second += c;
}

std::vector<std::string> HashStatsAccumulator::paths() const {
  std::vector<std::string> out;
  for (const auto& [p, c] : counts_) out.push_back(p);
  return out;
}

const torch::Tensor& HashStatsAccumulator::counts(const std::string& path) const {
  auto it = counts_.find(path);
  if (it == counts_.end()) throw std::out_of_range("hash stats have no path '" + path + "'");
  return it->second;
}

HashStats HashStatsAccumulator::stats(const std::string& path) const { return hash_stats(counts(path)); }

void HashStatsAccumulator::clear() {
  counts_.clear();
  steps_ = 0;
}

}  // namespace mnemo
