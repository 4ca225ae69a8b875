#include "core/engine/doc_score.h"

#include "core/models/config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mnemo {

SegmentInput document_segment_input(const Segmenter& seg, int64_t i, const MemoryModelImpl& model) {
  auto dev = model.device();
  Segment s = seg.segment(i);
  SegmentInput in;
  in.tokens = s.tokens.to(dev);
  in.valid = s.valid.to(dev);
  in.offsets = s.offsets;
  // Next token within the segment (decoder-only / MTN language modelling); Memformer ignores it.
  in.targets = in.tokens.roll(-1, 1);
  in.target_valid = in.valid.roll(-1, 1);
  in.target_valid.select(1, in.target_valid.size(1) - 1).fill_(false);
  if (i + 1 < seg.num_segments()) {
    Segment n = seg.segment(i + 1);
    in.next_tokens = n.tokens.to(dev);
    in.next_valid = n.valid.to(dev);
    // The last position predicts the next segment's first token (decoder-only models).
    const int64_t last = in.targets.size(1) - 1;
    in.targets.select(1, last).copy_(in.next_tokens.select(1, 0));
    in.target_valid.select(1, last).copy_(in.valid.select(1, last) & in.next_valid.select(1, 0));
  }
  // A token classifier (MTN answer tagging) gets no labels from a plain document: no loss.
  if (!model.predicts_tokens()) {
    in.targets = torch::Tensor();
    in.target_valid = torch::Tensor();
  }
  return in;
}

namespace {

// The document tokens segment i's step predicts and their losses (nats), in position order.
void segment_losses(const SegmentInput& in, const SegmentOutput& o, LossTarget target, int64_t i, int64_t segment_len,
                    int64_t doc_size, std::vector<int64_t>* tokens, std::vector<float>* loss) {
  if (!o.token_loss.defined()) return;
  torch::Tensor valid = target == LossTarget::kNextSegment ? in.next_valid : in.target_valid;
  if (!valid.defined()) return;
  const auto tl = o.token_loss.to(torch::kCPU).to(torch::kFloat).contiguous();
  valid = valid.to(torch::kCPU).contiguous();
  const float* l = tl.data_ptr<float>();
  const bool* v = valid.data_ptr<bool>();
  for (int64_t j = 0; j < tl.size(1); ++j) {
    if (!v[j]) continue;
    const int64_t t = predicted_token(target, i, segment_len, j);
    if (t < 0 || t >= doc_size) continue;
    if (tokens) tokens->push_back(t);
    loss->push_back(l[j]);
  }
}

// Adds one segment's losses to a document's, in the order score_document adds them.
void add_losses(DocumentLosses& d, const std::vector<int64_t>& tokens, const std::vector<float>& loss) {
  for (size_t k = 0; k < tokens.size(); ++k) {
    d.loss[static_cast<size_t>(tokens[k])] = loss[k];
    d.nats_sum += static_cast<double>(loss[k]);
    ++d.predicted;
  }
}

DocumentLosses empty_losses(const Document& doc) {
  DocumentLosses d;
  d.loss.assign(static_cast<size_t>(doc.size()), std::numeric_limits<float>::quiet_NaN());
  return d;
}

// The one stepping of a document every score here shares: segment i > 0 starts from the
// memory after i-1 under `a` (then `adjust` may replace it); visit(i, input, memory in,
// output) after each step; progress(done, total) false stops.
void step_document(MemoryModelImpl& model, const Document& doc, int64_t segment_len, MemoryAblation a,
                   const std::function<void(int64_t, MemoryState&)>& adjust,
                   const std::function<void(int64_t, const SegmentInput&, const MemoryState&, SegmentOutput&)>& visit,
                   const std::function<bool(int64_t, int64_t)>& progress, bool* complete) {
  c10::InferenceMode g;
  const bool was_training = model.is_training();
  model.eval();
  Segmenter seg(&doc, segment_len);
  const MemoryState initial = model.initial_memory(1);
  MemoryState mem = initial;
  const int64_t n = seg.num_segments();
  if (complete) *complete = true;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) mem = ablated_memory(a, mem, initial);
    if (adjust) adjust(i, mem);
    const SegmentInput in = document_segment_input(seg, i, model);
    SegmentOutput o = model.step(in, mem, nullptr);
    visit(i, in, mem, o);
    mem = std::move(o.memory);
    if (progress && !progress(i + 1, n)) {
      if (complete) *complete = false;
      break;
    }
  }
  if (was_training) model.train();
}

}  // namespace

double DocumentLosses::bits_per_token() const {
  return predicted > 0 ? nats_sum / static_cast<double>(predicted) / std::log(2.0)
                       : std::numeric_limits<double>::quiet_NaN();
}

DocumentLosses score_document(MemoryModelImpl& model, const Document& doc, int64_t segment_len, MemoryAblation a,
                              const std::function<bool(int64_t, int64_t)>& progress, bool* complete) {
  const LossTarget target = loss_target_of(model.kind());
  DocumentLosses out = empty_losses(doc);
  step_document(
      model, doc, segment_len, a, nullptr,
      [&](int64_t i, const SegmentInput& in, const MemoryState&, SegmentOutput& o) {
        std::vector<int64_t> tokens;
        std::vector<float> loss;
        segment_losses(in, o, target, i, segment_len, doc.size(), &tokens, &loss);
        add_losses(out, tokens, loss);
      },
      progress, complete);
  return out;
}

double SegmentEntryEffects::bits_saved(size_t ablation, int64_t entry) const {
  const auto& r = ablations.at(ablation).removed.at(static_cast<size_t>(entry));
  double s = 0;
  for (size_t k = 0; k < carried.size(); ++k) s += static_cast<double>(r[k]) - static_cast<double>(carried[k]);
  return s / std::log(2.0);
}

double SegmentEntryEffects::all_bits_saved(size_t ablation) const {
  const auto& r = ablations.at(ablation).all_removed;
  double s = 0;
  for (size_t k = 0; k < carried.size(); ++k) s += static_cast<double>(r[k]) - static_cast<double>(carried[k]);
  return s / std::log(2.0);
}

namespace {

// segment_entry_effects once the carried step is done.
void remove_entries(MemoryModelImpl& model, const SegmentInput& in, SegmentEntryEffects& fx, int64_t segment_len,
                    int64_t doc_size, const MemoryState& before, const MemoryState& initial,
                    const MemoryEntries& entries, const std::vector<MemoryAblation>& ablations,
                    const std::function<bool()>& keep_going) {
  const LossTarget target = loss_target_of(model.kind());
  const int64_t n = entries.count();
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) all[static_cast<size_t>(e)] = e;
  for (MemoryAblation a : ablations) {
    EntryAblationLosses el;
    el.ablation = a;
    auto losses = [&](const std::vector<int64_t>& which) {
      std::vector<float> loss;
      if (fx.segment == 0) return fx.carried;  // the initial memory: nothing written to remove
      const SegmentOutput o = model.step(in, ablate_entries(before, initial, entries, which, a), nullptr);
      segment_losses(in, o, target, fx.segment, segment_len, doc_size, nullptr, &loss);
      return loss;
    };
    for (int64_t e = 0; e < n; ++e) {
      if (keep_going && !keep_going()) {
        fx.ablations.clear();
        return;
      }
      el.removed.push_back(losses({e}));
    }
    el.all_removed = losses(all);
    fx.ablations.push_back(std::move(el));
  }
}

}  // namespace

SegmentEntryEffects segment_entry_effects(MemoryModelImpl& model, const Document& doc, int64_t segment_len, int64_t i,
                                          const MemoryState& before, const MemoryState& initial,
                                          const MemoryEntries& entries, const std::vector<MemoryAblation>& ablations,
                                          const std::function<bool()>& keep_going) {
  c10::InferenceMode g;
  const bool was_training = model.is_training();
  model.eval();
  SegmentEntryEffects fx;
  fx.segment = i;
  Segmenter seg(&doc, segment_len);
  const SegmentInput in = document_segment_input(seg, i, model);
  const SegmentOutput o = model.step(in, before, nullptr);
  segment_losses(in, o, loss_target_of(model.kind()), i, segment_len, doc.size(), &fx.tokens, &fx.carried);
  remove_entries(model, in, fx, segment_len, doc.size(), before, initial, entries, ablations, keep_going);
  if (was_training) model.train();
  return fx;
}

std::vector<int64_t> DocumentEntryEffects::ranking(size_t ablation) const {
  const auto& b = entry_bits_saved.at(ablation);
  std::vector<int64_t> r(b.size());
  for (size_t e = 0; e < r.size(); ++e) r[e] = static_cast<int64_t>(e);
  std::stable_sort(r.begin(), r.end(), [&](int64_t x, int64_t y) { return b[static_cast<size_t>(x)] > b[static_cast<size_t>(y)]; });
  return r;
}

DocumentEntryEffects score_document_by_entry(MemoryModelImpl& model, const Document& doc, int64_t segment_len,
                                             const std::vector<MemoryAblation>& ablations,
                                             const std::function<bool(int64_t, int64_t)>& progress, bool* complete) {
  DocumentEntryEffects out;
  const MemoryState initial = model.initial_memory(1);
  out.entries = memory_entries(model.capabilities(), initial, segment_len);
  out.ablations = ablations;
  out.carried = empty_losses(doc);
  out.all_removed.assign(ablations.size(), empty_losses(doc));
  out.entry_bits_saved.assign(ablations.size(), std::vector<double>(static_cast<size_t>(out.entries.count()), 0.0));
  out.all_bits_saved.assign(ablations.size(), 0.0);
  const LossTarget target = loss_target_of(model.kind());
  step_document(
      model, doc, segment_len, MemoryAblation::kCarried, nullptr,
      [&](int64_t i, const SegmentInput& in, const MemoryState& before, SegmentOutput& o) {
        SegmentEntryEffects fx;
        fx.segment = i;
        segment_losses(in, o, target, i, segment_len, doc.size(), &fx.tokens, &fx.carried);
        remove_entries(model, in, fx, segment_len, doc.size(), before, initial, out.entries, ablations, nullptr);
        add_losses(out.carried, fx.tokens, fx.carried);
        for (size_t a = 0; a < ablations.size(); ++a) {
          add_losses(out.all_removed[a], fx.tokens, fx.ablations[a].all_removed);
          for (int64_t e = 0; e < out.entries.count(); ++e) out.entry_bits_saved[a][static_cast<size_t>(e)] += fx.bits_saved(a, e);
          out.all_bits_saved[a] += fx.all_bits_saved(a);
        }
        out.segments.push_back(std::move(fx));
      },
      progress, complete);
  return out;
}

MemoryState document_memory_after(MemoryModelImpl& model, const Document& doc, int64_t segment_len, int64_t s) {
  const int64_t n = segment_count(doc.size(), segment_len);
  if (s < 0 || s >= n)
    throw std::out_of_range("segment " + std::to_string(s) + " is out of range 0.." + std::to_string(n - 1) + " ('" +
                            doc.path + "' has " + std::to_string(n) + " segments of " + std::to_string(segment_len) +
                            " tokens)");
  MemoryState after;
  step_document(
      model, doc, segment_len, MemoryAblation::kCarried, nullptr,
      [&](int64_t i, const SegmentInput&, const MemoryState&, SegmentOutput& o) {
        if (i == s) after = o.memory.detached_clone();
      },
      [&](int64_t done, int64_t) { return done <= s; }, nullptr);
  return after;
}

DocumentLosses score_document_patched(MemoryModelImpl& model, const Document& doc, int64_t segment_len,
                                      const MemoryState& patch, int64_t at) {
  const int64_t n = segment_count(doc.size(), segment_len);
  if (at < 0 || at >= n)
    throw std::out_of_range("segment " + std::to_string(at) + " is out of range 0.." + std::to_string(n - 1) + " ('" +
                            doc.path + "' has " + std::to_string(n) + " segments of " + std::to_string(segment_len) +
                            " tokens)");
  const MemoryState initial = model.initial_memory(1);
  bool fits = patch.tensors.size() == initial.tensors.size();
  for (const auto& [k, t] : initial.tensors) {
    auto it = patch.tensors.find(k);
    fits = fits && it != patch.tensors.end() && it->second.defined() == t.defined() &&
           (!t.defined() || (it->second.sizes() == t.sizes() && it->second.scalar_type() == t.scalar_type()));
  }
  if (!fits) throw std::invalid_argument("the patched memory is not a memory of this " + model.kind() + " model");
  const LossTarget target = loss_target_of(model.kind());
  DocumentLosses out = empty_losses(doc);
  step_document(
      model, doc, segment_len, MemoryAblation::kCarried,
      [&](int64_t i, MemoryState& mem) {
        if (i == at) mem = patch;
      },
      [&](int64_t i, const SegmentInput& in, const MemoryState&, SegmentOutput& o) {
        std::vector<int64_t> tokens;
        std::vector<float> loss;
        segment_losses(in, o, target, i, segment_len, doc.size(), &tokens, &loss);
        add_losses(out, tokens, loss);
      },
      nullptr, nullptr);
  return out;
}

}  // namespace mnemo
