#include "core/trace/provenance.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

namespace mnemo {

namespace {
void check_weights(const std::vector<float>& w, const char* name, int64_t segment) {
  for (float v : w)
    if (!std::isfinite(v) || v < 0.f)
      throw std::invalid_argument(std::string("provenance step ") + std::to_string(segment) + ": " + name +
                                  " holds a negative or non-finite weight");
}
}  // namespace

void ProvenanceStep::validate() const {
  const std::string at = "provenance step " + std::to_string(segment) + ": ";
  if (segment < 0) throw std::invalid_argument(at + "segment must be >= 0");
  if (slots <= 0) throw std::invalid_argument(at + "slots must be > 0");
  if (tokens < 0 || first_token < 0) throw std::invalid_argument(at + "negative token range");
  const size_t s = static_cast<size_t>(slots);
  if (carry.size() != (diagonal ? s : s * s)) throw std::invalid_argument(at + "carry has the wrong size");
  if (source.size() != s * static_cast<size_t>(tokens)) throw std::invalid_argument(at + "source has the wrong size");
  if (!other.empty() && other.size() != s) throw std::invalid_argument(at + "other has the wrong size");
  check_weights(carry, "carry", segment);
  check_weights(source, "source", segment);
  check_weights(other, "other", segment);
}

void ProvenanceStep::normalise() {
  if (other.empty()) other.assign(static_cast<size_t>(slots), 0.f);
  const int n = diagonal ? 1 : slots;
  for (int i = 0; i < slots; ++i) {
    float* c = carry.data() + static_cast<size_t>(diagonal ? i : i * slots);
    float* src = source.data() + static_cast<size_t>(i) * tokens;
    double sum = other[i];
    for (int r = 0; r < n; ++r) sum += c[r];
    for (int j = 0; j < tokens; ++j) sum += src[j];
    if (sum <= 0.0) {
      if (diagonal) c[0] = 1.f;
      else other[i] = 1.f;
      continue;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int r = 0; r < n; ++r) c[r] *= inv;
    for (int j = 0; j < tokens; ++j) src[j] *= inv;
    other[i] *= inv;
  }
}

float ProvenanceState::row_max(int slot) const {
  if (width() <= 0) return 0.f;
  const float* r = row(slot);
  return *std::max_element(r, r + width());
}

ProvenanceState initial_provenance(int slots, int top_k, int64_t token_begin) {
  ProvenanceState s;
  s.slots = slots;
  s.token_begin = token_begin;
  s.tokens = token_begin;
  s.initial.assign(static_cast<size_t>(slots), 1.f);
  s.other.assign(static_cast<size_t>(slots), 0.f);
  s.top_k = top_k;
  s.top.assign(static_cast<size_t>(slots) * top_k, ProvenanceSource{});
  return s;
}

void fill_top_sources(ProvenanceState* s) {
  s->top.assign(static_cast<size_t>(s->slots) * s->top_k, ProvenanceSource{});
  if (s->top_k <= 0) return;
  std::vector<ProvenanceSource> best;
  for (int i = 0; i < s->slots; ++i) {
    best.clear();
    const float* r = s->row(i);
    // A bounded insertion list: top_k is small (a handful), tokens many.
    for (int64_t t = s->token_begin; t < s->tokens; ++t) {
      const float w = r[t - s->token_begin];
      if (w <= 0.f) continue;
      if (static_cast<int>(best.size()) == s->top_k && w <= best.back().weight) continue;
      auto pos = std::upper_bound(best.begin(), best.end(), w,
                                  [](float v, const ProvenanceSource& e) { return v > e.weight; });
      best.insert(pos, ProvenanceSource{t, w});
      if (static_cast<int>(best.size()) > s->top_k) best.pop_back();
    }
    std::copy(best.begin(), best.end(), s->top.begin() + static_cast<std::ptrdiff_t>(i) * s->top_k);
  }
}

ProvenanceState advance_provenance(const ProvenanceState& prev, const ProvenanceStep& step) {
  if (step.slots != prev.slots)
    throw std::invalid_argument("provenance step " + std::to_string(step.segment) + " has " +
                                std::to_string(step.slots) + " entries, the chain " + std::to_string(prev.slots));
  if (step.first_token < prev.token_begin)
    throw std::invalid_argument("provenance step " + std::to_string(step.segment) + " starts at token " +
                                std::to_string(step.first_token) + ", before the chain's first token " +
                                std::to_string(prev.token_begin));
  ProvenanceState out;
  out.segment = step.segment;
  out.slots = prev.slots;
  out.token_begin = prev.token_begin;
  out.tokens = std::max<int64_t>(prev.tokens, step.first_token + step.tokens);
  out.top_k = prev.top_k;
  const size_t m = static_cast<size_t>(prev.slots);
  const size_t n = static_cast<size_t>(out.width());
  const size_t pn = static_cast<size_t>(prev.width());
  out.weight.assign(m * n, 0.f);
  out.initial.assign(m, 0.f);
  out.other.assign(m, 0.f);
  for (size_t i = 0; i < m; ++i) {
    float* dst = out.weight.data() + i * n;
    // Carried shares: the previous provenance of the entries this one reads.
    const size_t r0 = step.diagonal ? i : 0, r1 = step.diagonal ? i + 1 : m;
    for (size_t r = r0; r < r1; ++r) {
      const float c = step.diagonal ? step.carry[i] : step.carry[i * m + r];
      if (c == 0.f) continue;
      const float* src = prev.weight.data() + r * pn;
      for (size_t t = 0; t < pn; ++t) dst[t] += c * src[t];
      out.initial[i] += c * prev.initial[r];
      out.other[i] += c * prev.other[r];
    }
    // New shares: this step's tokens and other inputs.
    const float* s = step.source.data() + i * static_cast<size_t>(step.tokens);
    float* seg = dst + (step.first_token - out.token_begin);
    for (int j = 0; j < step.tokens; ++j) seg[j] += s[j];
    if (!step.other.empty()) out.other[i] += step.other[i];
  }
  fill_top_sources(&out);
  return out;
}

namespace {
int64_t share_bytes(const ProvenanceState& s) { return static_cast<int64_t>(s.weight.size() * sizeof(float)); }
}  // namespace

ProvenanceChain::ProvenanceChain(int slots, int top_k, int checkpoint_every, int64_t kept_budget_bytes)
    : slots_(slots),
      top_k_(std::max(0, top_k)),
      checkpoint_every_(std::max(1, checkpoint_every)),
      budget_(std::max<int64_t>(0, kept_budget_bytes)),
      spacing_(checkpoint_every_) {
  if (slots <= 0) throw std::invalid_argument("provenance chain: slots must be > 0");
  kept_[-1] = std::make_shared<const ProvenanceState>(initial_provenance(slots_, top_k_));
}

void ProvenanceChain::record(ProvenanceStep step) {
  step.validate();
  if (step.slots != slots_)
    throw std::invalid_argument("provenance step " + std::to_string(step.segment) + " has " +
                                std::to_string(step.slots) + " entries, the chain " + std::to_string(slots_));
  step.normalise();
  auto it = records_.find(step.segment);
  if (it != records_.end()) {
    const ProvenanceStep& old = it->second;
    if (old.carry == step.carry && old.source == step.source && old.other == step.other &&
        old.first_token == step.first_token && old.diagonal == step.diagonal)
      return;
    // States computed from the old record are no longer right.
    kept_.erase(kept_.lower_bound(step.segment), kept_.end());
    if (last_ && last_->segment >= step.segment) last_.reset();
  }
  records_[step.segment] = std::move(step);
}

ProvenanceStatePtr ProvenanceChain::at(int64_t t) {
  if (t < -1) return nullptr;
  if (last_ && last_->segment == t) return last_;
  // Start from the last state when it lies before t, else from the nearest kept one.
  ProvenanceStatePtr cur;
  if (last_ && last_->segment < t) cur = last_;
  auto k = kept_.upper_bound(t);
  --k;  // kept_ always holds -1
  if (!cur || k->first > cur->segment) cur = k->second;
  for (int64_t s = cur->segment + 1; s <= t; ++s) {
    auto r = records_.find(s);
    if (r == records_.end()) return nullptr;
    cur = std::make_shared<const ProvenanceState>(advance_provenance(*cur, r->second));
    ++updates_;
    if (s % spacing_ == 0) keep(s, cur);
  }
  last_ = cur;
  return cur;
}

int64_t ProvenanceChain::kept_bytes() const {
  int64_t n = 0;  // summed when a state is kept: one pass over a map of at most t / spacing entries
  for (auto k = kept_.upper_bound(-1); k != kept_.end(); ++k) n += share_bytes(*k->second);
  return n;
}

void ProvenanceChain::keep(int64_t segment, ProvenanceStatePtr state) {
  if (!kept_.emplace(segment, std::move(state)).second) return;
  // Over the budget: double the spacing and drop the kept states that are not on it (the
  // state before the first step, -1, always stays).
  while (kept_.size() > 1 && spacing_ < (1 << 30) && kept_bytes() > budget_) {
    spacing_ *= 2;
    for (auto k = kept_.upper_bound(-1); k != kept_.end();) k = k->first % spacing_ != 0 ? kept_.erase(k) : std::next(k);
  }
}

void ProvenanceChain::clear() {
  records_.clear();
  kept_.erase(kept_.upper_bound(-1), kept_.end());
  last_.reset();
  spacing_ = checkpoint_every_;
}

ProvenanceState kept_entry_provenance(int64_t segment, const std::vector<int64_t>& kept_source, int64_t tokens,
                                      int top_k) {
  ProvenanceState s;
  s.segment = segment;
  s.slots = static_cast<int>(kept_source.size());
  int64_t n = tokens;
  for (int64_t src : kept_source) n = std::max(n, src + 1);
  s.tokens = n;
  s.weight.assign(static_cast<size_t>(s.slots) * static_cast<size_t>(n), 0.f);
  s.initial.assign(static_cast<size_t>(s.slots), 0.f);
  s.other.assign(static_cast<size_t>(s.slots), 0.f);
  for (int i = 0; i < s.slots; ++i) {
    if (kept_source[i] < 0) s.initial[i] = 1.f;
    else s.weight[static_cast<size_t>(i) * n + kept_source[i]] = 1.f;
  }
  s.top_k = top_k;
  fill_top_sources(&s);
  return s;
}

ProvenanceStep memformer_provenance_step(int64_t segment, int64_t first_token, int slots, int length, int n_cls,
                                         const float* writer_mean) {
  ProvenanceStep p;
  p.segment = segment;
  p.slots = slots;
  p.first_token = first_token;
  p.tokens = length;
  p.diagonal = true;
  const int cols = 1 + length + n_cls;
  p.carry.resize(static_cast<size_t>(slots));
  p.source.resize(static_cast<size_t>(slots) * length);
  p.other.assign(static_cast<size_t>(slots), 0.f);
  for (int i = 0; i < slots; ++i) {
    const float* row = writer_mean + static_cast<size_t>(i) * cols;
    p.carry[i] = row[0];
    std::copy(row + 1, row + 1 + length, p.source.begin() + static_cast<std::ptrdiff_t>(i) * length);
    for (int c = 0; c < n_cls; ++c) p.other[i] += row[1 + length + c];
  }
  return p;
}

}  // namespace mnemo
