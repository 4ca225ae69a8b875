#include "app/figures/step_data.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

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

VisitedSegments::VisitedSegments(std::initializer_list<value_type> records) {
  for (const auto& [seg, rec] : records) set(seg, rec);
}

void VisitedSegments::set(int64_t segment, Record record) {
  if (segment < 0) throw std::invalid_argument("a visited segment's index is >= 0, not " + std::to_string(segment));
  const auto b = static_cast<size_t>(segment / kBlock);
  const auto i = static_cast<size_t>(segment % kBlock);
  if (b >= blocks_.size()) {
    if (!record) return;
    blocks_.resize(b + 1);
  }
  auto block = blocks_[b] ? std::make_shared<Block>(*blocks_[b]) : std::make_shared<Block>();
  const bool had = (*block)[i] != nullptr;
  (*block)[i] = std::move(record);
  const bool has = (*block)[i] != nullptr;
  size_ = size_ - (had ? 1 : 0) + (has ? 1 : 0);
  bool any = false;
  for (const auto& r : *block) any = any || r != nullptr;
  blocks_[b] = any ? std::shared_ptr<const Block>(std::move(block)) : nullptr;
  while (!blocks_.empty() && !blocks_.back()) blocks_.pop_back();
}

void VisitedSegments::clear() {
  blocks_.clear();
  size_ = 0;
}

const VisitedSegments::Record* VisitedSegments::slot(int64_t segment) const {
  if (segment < 0 || segment >= capacity()) return nullptr;
  const auto& block = blocks_[static_cast<size_t>(segment / kBlock)];
  if (!block) return nullptr;
  const Record& r = (*block)[static_cast<size_t>(segment % kBlock)];
  return r ? &r : nullptr;
}

const VisitedSegments::Record& VisitedSegments::at(int64_t segment) const {
  const Record* r = slot(segment);
  if (!r) throw std::out_of_range("segment " + std::to_string(segment) + " was not visited");
  return *r;
}

int64_t VisitedSegments::next_present(int64_t from) const {
  for (int64_t s = std::max<int64_t>(from, 0); s < capacity();) {
    if (!blocks_[static_cast<size_t>(s / kBlock)]) {
      s = (s / kBlock + 1) * kBlock;  // an empty block: skip it whole
      continue;
    }
    if (slot(s)) return s;
    ++s;
  }
  return -1;
}

int64_t VisitedSegments::prev_present(int64_t from) const {
  for (int64_t s = std::min(from, capacity() - 1); s >= 0;) {
    if (!blocks_[static_cast<size_t>(s / kBlock)]) {
      s = (s / kBlock) * kBlock - 1;
      continue;
    }
    if (slot(s)) return s;
    --s;
  }
  return -1;
}

TokenLossAt token_loss_at(const VisitedSegments& visited, int64_t segment_len, int64_t t) {
  TokenLossAt out;
  if (segment_len <= 0 || t < 0) return out;
  // The only steps that can predict t: the segment before t's (next-segment prediction) and
  // the segment of token t-1 (next-token prediction).
  for (int64_t seg : {t / segment_len - 1, t > 0 ? (t - 1) / segment_len : -1}) {
    if (seg < 0) continue;
    auto it = visited.find(seg);
    if (it == visited.end() || !it->second->token_losses.covers(t)) continue;
    const auto& l = it->second->token_losses;
    out.loss = l.values[static_cast<size_t>(t - l.first)];
    out.segment = seg;
    auto other = [&](const TokenLosses& o) { return o.covers(t) ? o.values[static_cast<size_t>(t - o.first)] : NAN; };
    out.loss_reset = other(it->second->token_losses_reset);
    out.loss_zeroed = other(it->second->token_losses_zeroed);
    return out;
  }
  return out;
}

float token_loss(const VisitedSegments& visited, int64_t segment_len, int64_t t) {
  return token_loss_at(visited, segment_len, t).loss;
}

int64_t predicting_segment(bool next_segment, int64_t segment_len, int64_t t) {
  if (segment_len <= 0 || t <= 0) return -1;
  return next_segment ? t / segment_len - 1 : (t - 1) / segment_len;
}

SegmentRecord segment_record_of(const StepData& step, const ProvenanceState* provenance) {
  SegmentRecord rec;
  rec.self_mass = step.memformer.self_mass;
  rec.token_losses = step.token_losses;
  rec.token_losses_reset = step.token_losses_reset;
  rec.token_losses_zeroed = step.token_losses_zeroed;
  if (provenance) {
    rec.prov_top_k = provenance->top_k;
    rec.prov_top = provenance->top;
    rec.prov_initial = provenance->initial;
  }
  return rec;
}

ScoredLoss scored_loss(const TokenLosses& losses, const std::vector<uint8_t>& scored) {
  ScoredLoss out;
  double sum = 0;
  for (size_t k = 0; k < losses.values.size(); ++k) {
    const int64_t t = losses.first + static_cast<int64_t>(k);
    if (t < 0 || t >= static_cast<int64_t>(scored.size()) || !scored[static_cast<size_t>(t)]) continue;
    if (!std::isfinite(losses.values[k])) continue;
    sum += losses.values[k];
    ++out.tokens;
  }
  if (out.tokens > 0) out.mean = sum / static_cast<double>(out.tokens);
  return out;
}

std::string segment_title(int64_t segment, int64_t train_step, const char* unit) {
  std::string s = std::string(unit) + " " + std::to_string(segment);
  if (train_step >= 0) s += ", training step " + std::to_string(train_step);
  return s;
}

}  // namespace mnemo::app
