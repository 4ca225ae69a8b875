#include "core/engine/engine.h"
#include "core/engine/doc_score.h"
#include "core/nn/torch_compat.h"

#include "core/nn/hashed_linear.h"

#include <stdexcept>

namespace mnemo {

namespace {
constexpr size_t kMaxKeptSnapshots = 256;  // traces can be large; memory states are always kept
}

bool find_non_finite(const Trace& trace, std::string* key) {
  for (const auto& [k, t] : trace.tensors) {
    if (!t.is_floating_point()) continue;
    if (!torch::isfinite(t).all().item<bool>()) {
      if (key) *key = k;
      return true;
    }
  }
  return false;
}

Engine::Engine(MemoryModel model, Document doc, int64_t segment_len, TraceSpec spec)
    : Engine(std::move(model), std::make_shared<const Document>(std::move(doc)), segment_len, std::move(spec)) {}

Engine::Engine(MemoryModel model, std::shared_ptr<const Document> doc, int64_t segment_len, TraceSpec spec)
    : model_(std::move(model)),
      doc_(doc ? std::move(doc) : std::make_shared<const Document>()),
      segmenter_(doc_.get(), segment_len),
      spec_(std::move(spec)) {
  if (!model_) throw std::invalid_argument("engine: no model");
  if (doc_->size() == 0) throw DocumentError("document '" + doc_->path + "' is empty; there is nothing to step through");
  torch::NoGradGuard g;
  states_.push_back(model_->initial_memory(1).detached_clone());
}

void Engine::set_step_observer(std::vector<std::string> keys, std::function<void(int64_t, const Trace&)> fn) {
  observer_spec_ = TraceSpec::of(std::move(keys));
  observer_ = std::move(fn);
}

void Engine::set_memory_benefit(bool on) {
  if (on == memory_benefit_) return;
  memory_benefit_ = on;
  snapshots_.clear();
}

void Engine::set_spec(TraceSpec spec) {
  spec_ = std::move(spec);
  snapshots_.clear();
}

SegmentInput Engine::input_for(int64_t i) const { return document_segment_input(segmenter_, i, *model_); }

SnapshotPtr Engine::compute(int64_t i, bool traced) {
  c10::InferenceMode g;  // no autograd bookkeeping at all: states and traces are never differentiated
  ExplicitAttentionScope same_bits_traced_or_not;  // docs/architecture.md#data-flow
  TORCH_CHECK(i < static_cast<int64_t>(states_.size()), "no kept state before segment ", i);
  const bool observed = observer_ && !observer_spec_.empty();
  // A traced step also traces what the observer needs (its keys then appear in the snapshot).
  TraceSpec step_spec = traced ? spec_ : observed ? observer_spec_ : TraceSpec::none();
  if (traced && observed)
    step_spec.patterns.insert(step_spec.patterns.end(), observer_spec_.patterns.begin(), observer_spec_.patterns.end());
  Tracer tracer(step_spec);
  SegmentInput in = input_for(i);
  // Memory benefit: the same segment from the initial and from a zeroed memory, before the
  // traced step (so a hashed projection's traced statistics are the real step's alone).
  std::map<std::string, torch::Tensor> ablated;
  if (traced && memory_benefit_ && !states_[0].empty()) {
    for (auto [key, a] : {std::pair{keys::kLmLossMemoryReset, MemoryAblation::kReset},
                          std::pair{keys::kLmLossMemoryZeroed, MemoryAblation::kZeroed}}) {
      const MemoryState m = i == 0 ? states_[0] : ablated_memory(a, states_[i], states_[0]);
      SegmentOutput o = model_->step(in, m, nullptr);
      if (o.token_loss.defined()) ablated[key] = o.token_loss.detach().to(torch::kCPU).contiguous();
    }
  }
  HashTracingScope hash_tracing(*model_, traced ? &tracer : nullptr);  // hash.* keys of hashed projections
  SegmentOutput out = model_->step(in, states_[i], traced || observed ? &tracer : nullptr);
  ++steps_computed_;
  if (observed) observer_(i, tracer.trace());
  if (static_cast<int64_t>(states_.size()) == i + 1) states_.push_back(out.memory.detached_clone());
  if (!traced) return nullptr;
  auto snap = std::make_shared<Snapshot>();
  snap->segment = i;
  snap->num_segments = num_segments();
  snap->first_token = i * segmenter_.segment_len();
  snap->length = std::min(segmenter_.segment_len(), doc_->size() - snap->first_token);
  snap->trace = tracer.take();
  for (auto& [k, t] : ablated) snap->trace.tensors[k] = std::move(t);
  if (out.loss.defined()) {
    snap->loss = out.loss.item<double>();
    if (!std::isfinite(snap->loss)) {
      snap->non_finite = true;
      snap->non_finite_key = "lm.loss";
    }
  }
  if (!snap->non_finite) snap->non_finite = find_non_finite(snap->trace, &snap->non_finite_key);
  SnapshotPtr p = snap;
  snapshots_[i] = p;
  while (snapshots_.size() > kMaxKeptSnapshots) {
    // Evict the snapshot farthest from the current position.
    auto far = snapshots_.begin();
    if (std::abs(snapshots_.rbegin()->first - i) > std::abs(far->first - i)) far = std::prev(snapshots_.end());
    snapshots_.erase(far);
  }
  return p;
}

SnapshotPtr Engine::step_forward() {
  if (position_ + 1 >= num_segments()) return nullptr;
  return jump(position_ + 1);
}

SnapshotPtr Engine::step_back() {
  if (position_ <= 0) return nullptr;
  return jump(position_ - 1);
}

SnapshotPtr Engine::jump(int64_t n) {
  if (n < 0 || n >= num_segments())
    throw std::out_of_range("segment " + std::to_string(n) + " is out of range 0.." + std::to_string(num_segments() - 1));
  auto it = snapshots_.find(n);
  if (it != snapshots_.end()) {
    position_ = n;
    return it->second;
  }
  // Untraced steps from the nearest kept state up to n, then one traced step for n.
  int64_t from = static_cast<int64_t>(states_.size()) - 1;
  const int64_t total = n > from ? n - from : 0;
  for (int64_t i = from; i < n; ++i) {
    compute(i, false);
    if (progress && !progress(i - from + 1, total + 1)) return nullptr;
  }
  auto snap = compute(n, true);
  position_ = n;
  return snap;
}

void Engine::reset() {
  states_.resize(1);
  snapshots_.clear();
  position_ = -1;
}

const MemoryState& Engine::memory_before(int64_t i) const {
  if (i < 0 || i >= static_cast<int64_t>(states_.size()))
    throw std::out_of_range("no kept memory state before segment " + std::to_string(i));
  return states_[i];
}

}  // namespace mnemo
