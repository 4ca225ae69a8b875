#include "core/models/memory_entries.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace mnemo {

std::pair<int64_t, int64_t> MemoryEntryGroup::range(int64_t g) const {
  if (g < 0 || g >= count) throw std::out_of_range(name + " " + std::to_string(g) + " of " + std::to_string(count));
  if (block == 1) return {g, g + 1};
  // Cache blocks: the newest `block` positions are the last block, the oldest may be shorter.
  const int64_t end = rows - (count - 1 - g) * block;
  return {std::max<int64_t>(0, end - block), end};
}

int64_t MemoryEntries::count() const {
  int64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

const MemoryEntryGroup& MemoryEntries::group_of(int64_t entry) const {
  for (const auto& g : groups)
    if (entry >= g.first && entry < g.first + g.count) return g;
  throw std::out_of_range("memory entry " + std::to_string(entry) + " is out of range 0.." + std::to_string(count() - 1));
}

std::string MemoryEntries::label(int64_t entry) const {
  const MemoryEntryGroup& g = group_of(entry);
  const int64_t i = entry - g.first;
  std::string s = g.name + " " + std::to_string(i);
  if (g.block > 1) {
    const auto [b, e] = g.range(i);
    s += " (positions " + std::to_string(b) + ".." + std::to_string(e - 1) + ")";
  }
  return s;
}

MemoryEntries memory_entries(const ModelCapabilities& caps, const MemoryState& initial, int64_t segment_len) {
  MemoryEntries out;
  out.kind = caps.memory;
  if (initial.empty() || caps.memory == MemoryKind::kNone) return out;
  if (segment_len < 1) throw std::invalid_argument("memory entries: segment length must be >= 1");
  // Every tensor of the state is one group's (its entries along dim 1) or shared (no dim 1).
  MemoryEntryGroup tokens, cache;
  const bool has_cache = caps.memory == MemoryKind::kCache || caps.memory == MemoryKind::kCacheAndTokens;
  switch (caps.memory) {
    case MemoryKind::kSlots: tokens.name = "slot"; break;
    case MemoryKind::kMemoryTokens:
    case MemoryKind::kCacheAndTokens: tokens.name = "memory token"; break;
    case MemoryKind::kKeptTokens: tokens.name = "kept entry"; break;
    case MemoryKind::kLearnedVectors: tokens.name = "learned vector"; break;
    default: break;
  }
  cache.name = "cache block";
  cache.block = segment_len;
  for (const auto& [key, t] : initial.tensors) {
    if (!t.defined() || t.dim() < 2) {
      out.shared.push_back(key);
      continue;
    }
    // Transformer-XL's cache: cache.<l> and cache_valid (not write_cache.*, RMT's write-only blocks).
    const bool is_cache = has_cache && key.rfind("cache", 0) == 0;
    MemoryEntryGroup& g = is_cache ? cache : tokens;
    if (g.keys.empty()) g.rows = t.size(1);
    if (t.size(1) != g.rows)
      throw std::invalid_argument("memory entries: state tensor '" + key + "' has " + std::to_string(t.size(1)) +
                                  " rows along dim 1, its group " + std::to_string(g.rows));
    g.keys.push_back(key);
  }
  if (!tokens.keys.empty()) {
    if (tokens.name.empty()) throw std::invalid_argument("memory entries: the model's memory kind keeps no entries");
    tokens.count = tokens.rows;
    out.groups.push_back(tokens);
  }
  if (!cache.keys.empty()) {
    cache.count = (cache.rows + segment_len - 1) / segment_len;
    cache.first = tokens.keys.empty() ? 0 : tokens.count;
    out.groups.push_back(cache);
  }
  if (caps.memory == MemoryKind::kCacheAndTokens && (tokens.keys.empty() || cache.keys.empty()))
    throw std::invalid_argument("memory entries: a cache-and-tokens state needs both 'memory' and 'cache.*'");
  return out;
}

MemoryState ablate_entries(const MemoryState& carried, const MemoryState& initial, const MemoryEntries& entries,
                           const std::vector<int64_t>& which, MemoryAblation a) {
  if (a == MemoryAblation::kCarried || which.empty()) return carried;
  std::vector<char> chosen(static_cast<size_t>(entries.count()), 0);
  for (int64_t e : which) {
    entries.group_of(e);  // throws for an entry out of range
    chosen[static_cast<size_t>(e)] = 1;
  }
  MemoryState out = carried;
  std::map<std::string, bool> copied;
  auto writable = [&](const std::string& key) -> torch::Tensor& {
    torch::Tensor& t = out.tensors.at(key);
    if (!copied[key]) {
      t = t.clone();
      copied[key] = true;
    }
    return t;
  };
  for (const auto& g : entries.groups)
    for (int64_t i = 0; i < g.count; ++i) {
      if (!chosen[static_cast<size_t>(g.first + i)]) continue;
      const auto [b, e] = g.range(i);
      for (const auto& key : g.keys) {
        torch::Tensor& t = writable(key);
        auto part = t.narrow(1, b, e - b);
        if (a == MemoryAblation::kZeroed && t.is_floating_point())
          part.zero_();
        else
          part.copy_(initial.at(key).narrow(1, b, e - b));
      }
    }
  const bool all = std::all_of(chosen.begin(), chosen.end(), [](char c) { return c != 0; });
  if (all)
    for (const auto& key : entries.shared) {
      torch::Tensor& t = out.tensors.at(key);
      if (!t.defined()) continue;
      t = a == MemoryAblation::kZeroed && t.is_floating_point() ? torch::zeros_like(t) : initial.at(key).clone();
    }
  return out;
}

}  // namespace mnemo
