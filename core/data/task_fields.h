// What every synthetic task and data-set task shares: the SplitMix64 generator (the same
// numbers on every platform, unlike std:: distributions, so "exact examples for a fixed seed"
// holds everywhere) and the reading of a task's integer config fields with the project's
// messages (docs/training.md, "Tasks"). Tasks kept in a config struct (TaskConfig,
// QaTaskOptions) use a field table (core/io/config_fields.h); the tasks that read their
// fields into themselves declare them here, one TaskField each.
#pragma once
#include "core/errors.h"
#include "core/io/config_fields.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

// The SplitMix64 finaliser: a bijective 64-bit mix.
inline uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The SplitMix64 stream: next() = splitmix64 of the running state.
struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    const uint64_t z = splitmix64(s);
    s += 0x9E3779B97F4A7C15ull;
    return z;
  }
  // Uniform in lo..hi (inclusive) by modulo; the bias is below 2^-40 for the ranges tasks use.
  int64_t uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Uniform in 0..n-1 by rejection (no modulo bias).
  int64_t below(int64_t n) {
    const uint64_t un = static_cast<uint64_t>(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return static_cast<int64_t>(x % un);
  }
  // Fisher-Yates with below().
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i) std::swap(v[i], v[below(i + 1)]);
  }
  // k distinct indices of 0..n-1, in random order.
  std::vector<int64_t> pick(int64_t n, int64_t k) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    shuffle(all);
    all.resize(static_cast<size_t>(k));
    return all;
  }
};

// One integer field of a task: its JSON name, where it is read to (and written from), and
// its range. A task lists its fields once (a function returning them) for both
// read_task_fields and write_task_fields.
struct TaskField {
  std::string name;
  int64_t* value;
  int64_t lo, hi;
  // Not written while it holds this value: a field added after configs were written, whose
  // absence in them means this value (so they are written back as they were).
  std::optional<int64_t> unwritten_at = std::nullopt;
};

// Reads a task config object: "name" and the keys in `handled` are skipped (the caller reads
// them), "seed" must be a non-negative integer, every other key must be one of `fields`
// (integers); then every field is checked against its range (the read value or the default
// the pointer held). Otherwise a ConfigError naming the field ("task.<name>"; the messages of
// core/io/config_fields.h), the task `kind` and the known fields. Ranges that depend on
// other fields are the caller's (check_range after this).
void read_task_fields(const nlohmann::json& j, const std::string& kind, const std::vector<TaskField>& fields,
                      uint64_t* seed, const std::vector<std::string>& handled = {});

// The task's normalised config (its to_json): {"name": kind, every field but those at their
// unwritten_at value, "seed": seed}. The caller adds the keys it reads itself.
nlohmann::json write_task_fields(const std::string& kind, const std::vector<TaskField>& fields, uint64_t seed);

}  // namespace mnemo
