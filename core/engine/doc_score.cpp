#include "core/engine/doc_score.h"

#include "core/models/config.h"

#include <cmath>
#include <limits>

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

double DocumentLosses::bits_per_token() const {
  return predicted > 0 ? nats_sum / static_cast<double>(predicted) / std::log(2.0)
                       : std::numeric_limits<double>::quiet_NaN();
}

DocumentLosses score_document(MemoryModelImpl& model, const Document& doc, int64_t segment_len, MemoryAblation a,
                              const std::function<bool(int64_t, int64_t)>& progress, bool* complete) {
  c10::InferenceMode g;
  const bool was_training = model.is_training();
  model.eval();
  Segmenter seg(&doc, segment_len);
  const LossTarget target = loss_target_of(model.kind());
  DocumentLosses out;
  out.loss.assign(static_cast<size_t>(doc.size()), std::numeric_limits<float>::quiet_NaN());
  const MemoryState initial = model.initial_memory(1);
  MemoryState mem = initial;
  const int64_t n = seg.num_segments();
  if (complete) *complete = true;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) mem = ablated_memory(a, mem, initial);
    const SegmentInput in = document_segment_input(seg, i, model);
    SegmentOutput o = model.step(in, mem, nullptr);
    if (o.token_loss.defined()) {
      const auto tl = o.token_loss.to(torch::kCPU).to(torch::kFloat).contiguous();
      // Which positions were predicted: the targets' validity (Memformer: the next segment's).
      torch::Tensor valid = target == LossTarget::kNextSegment ? in.next_valid : in.target_valid;
      if (valid.defined()) {
        valid = valid.to(torch::kCPU).contiguous();
        const float* l = tl.data_ptr<float>();
        const bool* v = valid.data_ptr<bool>();
        for (int64_t j = 0; j < tl.size(1); ++j) {
          if (!v[j]) continue;
          const int64_t t = predicted_token(target, i, segment_len, j);
          if (t < 0 || t >= doc.size()) continue;
          out.loss[static_cast<size_t>(t)] = l[j];
          out.nats_sum += static_cast<double>(l[j]);
          ++out.predicted;
        }
      }
    }
    mem = std::move(o.memory);
    if (progress && !progress(i + 1, n)) {
      if (complete) *complete = false;
      break;
    }
  }
  if (was_training) model.train();
  return out;
}

}  // namespace mnemo
