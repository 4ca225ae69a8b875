#include "app/figures/step_data.h"

#include <algorithm>
#include <cctype>

namespace mnemo::app {

std::pair<std::string, std::string> split_hash_path(const std::string& path) {
  // The layer part ends after the first component that is all digits ("layers.0").
  size_t start = 0;
  while (start < path.size()) {
    size_t dot = path.find('.', start);
    const size_t end = dot == std::string::npos ? path.size() : dot;
    const std::string comp = path.substr(start, end - start);
    if (!comp.empty() && std::all_of(comp.begin(), comp.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return {path.substr(0, end), end < path.size() ? path.substr(end + 1) : std::string()};
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return {path, ""};
}

const float* AttentionData::map(int li, int head) const {
  if (empty() || li < 0 || li >= static_cast<int>(layers.size())) return nullptr;
  const int b = head < 0 || head >= heads ? 0 : head + 1;
  return values.data() + (static_cast<size_t>(li) * static_cast<size_t>(blocks()) + static_cast<size_t>(b)) *
                             static_cast<size_t>(rows) * static_cast<size_t>(cols);
}

float AttentionData::map_max(int li, int head) const {
  if (empty() || li < 0 || li >= static_cast<int>(layers.size())) return 1.f;
  const int b = head < 0 || head >= heads ? 0 : head + 1;
  const size_t i = static_cast<size_t>(li) * static_cast<size_t>(blocks()) + static_cast<size_t>(b);
  return i < block_max.size() ? block_max[i] : 1.f;
}

float AttentionData::mass_at(int li, int head, int k) const {
  const size_t nm = mass_names.size();
  if (nm == 0 || k < 0 || static_cast<size_t>(k) >= nm || li < 0 || li >= static_cast<int>(layers.size())) return NAN;
  const int b = head < 0 || head >= heads ? 0 : head + 1;
  const size_t i = (static_cast<size_t>(li) * static_cast<size_t>(blocks()) + static_cast<size_t>(b)) * nm + static_cast<size_t>(k);
  return i < mass.size() ? mass[i] : NAN;
}

const AttnBlock* AttentionData::row_block(int i) const {
  for (const auto& b : row_blocks)
    if (i >= b.first && i < b.first + b.count) return &b;
  return nullptr;
}

const AttnBlock* AttentionData::col_block(int i) const {
  for (const auto& b : col_blocks)
    if (i >= b.first && i < b.first + b.count) return &b;
  return nullptr;
}

const float* StepData::writer_block(int head) const {
  if (!has_writer()) return nullptr;
  const int b = head < 0 || head >= heads ? 0 : head + 1;
  return writer.data() + static_cast<size_t>(b) * static_cast<size_t>(slots) * static_cast<size_t>(cols);
}

float token_loss(const VisitedSegments& visited, int64_t segment_len, int64_t t) {
  if (segment_len <= 0 || t < 0) return NAN;
  const int64_t seg = t / segment_len;
  if (seg == 0) return NAN;
  auto it = visited.find(seg - 1);
  if (it == visited.end()) return NAN;
  const int64_t j = t - seg * segment_len;
  const auto& l = it->second->next_loss;
  return j < static_cast<int64_t>(l.size()) ? l[static_cast<size_t>(j)] : NAN;
}

}  // namespace mnemo::app
