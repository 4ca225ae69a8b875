#include "core/train/evaluate.h"

#include "core/models/config.h"
#include "core/train/lm_metrics.h"

#include <algorithm>

namespace mnemo {

bool predicts_next_segment(const MemoryModelImpl& m) { return loss_target_of(m.kind()) == LossTarget::kNextSegment; }

torch::Tensor score_target(const SegmentInput& in, bool next) {
  if (next && in.next_tokens.defined()) return in.next_tokens;
  return in.targets.defined() ? in.targets : in.next_tokens;
}

std::vector<torch::Tensor> score_masks(const TaskBatch& tb, bool next) {
  std::vector<torch::Tensor> out;
  for (size_t t = 0; t < tb.segments.size(); ++t) {
    const auto& s = tb.segments[t];
    if (next && s.next_tokens.defined()) out.push_back(s.next_valid);
    else if (tb.scored.size() == tb.segments.size()) out.push_back(tb.scored[t]);
    else out.push_back(s.targets.defined() ? s.target_valid : s.next_valid);
  }
  return out;
}

ScoreTotals evaluate_model(MemoryModelImpl& model, const TaskSource& task, Split split, int64_t batches, int64_t batch,
                           bool zero_memory, int64_t shard, int64_t shards, PositionLosses* by_position,
                           bool reset_memory) {
  torch::NoGradGuard g;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t n_split = task.split_size(split);
  const int64_t total = batches < 0 ? n_split : std::min(n_split, batches * batch);
  const auto dev = model.device();
  const bool next = predicts_next_segment(model);
  ScoreTotals sum;
  int64_t index = -1;
  for (int64_t first = 0; first < total; first += batch) {
    if (++index % shards != shard) continue;
    const int64_t bsz = std::min(batch, total - first);
    std::vector<int64_t> idx(static_cast<size_t>(bsz));
    for (int64_t i = 0; i < bsz; ++i) idx[static_cast<size_t>(i)] = first + i;
    TaskBatch tb = task.batch(split, idx, dev);
    const MemoryState initial = model.initial_memory(bsz);
    MemoryState mem = initial;
    std::vector<torch::Tensor> preds, targets, logits(tb.segments.size());
    ScoreTotals part;
    const int64_t frozen = tb.memory_frozen_from;
    const std::vector<torch::Tensor> position_masks = by_position ? score_masks(tb, next) : std::vector<torch::Tensor>();
    for (size_t t = 0; t < tb.segments.size(); ++t) {
      const auto ti = static_cast<int64_t>(t);
      if ((zero_memory || reset_memory) && t > 0)
        mem = ablated_memory(zero_memory ? MemoryAblation::kZeroed : MemoryAblation::kReset, mem, initial);
      const auto& in = tb.segments[t];
      const torch::Tensor target = score_target(in, next);
      if (initial.empty() && frozen >= 0 && ti < frozen) {
        // No memory: the segments before a frozen memory carry nothing to the later ones
        // (the QA baseline "skips the reading phase"); they have no loss by construction.
        preds.push_back(torch::zeros_like(target));
        targets.push_back(target);
        continue;
      }
      SegmentOutput out = model.step(in, mem, nullptr);
      preds.push_back(out.logits.argmax(-1));
      targets.push_back(target);
      logits[t] = out.logits;
      if (by_position && out.token_loss.defined()) by_position->add(ti, out.token_loss, position_masks[t]);
      part.loss_sum += out.loss_sum.item<double>();
      part.loss_count += out.loss_count.item<double>();
      if (frozen < 0 || ti < frozen) mem = std::move(out.memory);  // segments >= frozen see the memory after frozen-1
    }
    ScoreTotals s = score_predictions(preds, targets, score_masks(tb, next));
    s.loss_sum = part.loss_sum;
    s.loss_count = part.loss_count;
    task.accumulate_metrics(tb, logits, s.extra);
    sum.add(s);
  }
  if (was_training) model.train();
  return sum;
}


EvalMetrics eval_metrics(const ScoreTotals& s, const TaskSource& task, int64_t step, Split split, bool zero_memory) {
  EvalMetrics e;
  e.step = step;
  e.split = split;
  e.zero_memory = zero_memory;
  e.segments = task.segments();
  e.loss = s.loss();
  e.bits_per_token = bits_per_token(s.loss_sum, s.loss_count);
  e.perplexity = perplexity(s.loss_sum, s.loss_count);
  e.tokens = s.loss_count;
  e.accuracy = s.accuracy();
  e.exact_match = s.exact_match();
  e.examples = s.examples;
  e.split_examples = task.split_size(split);
  e.chars = s.chars;
  e.extra = task.finish_metrics(s.extra);
  return e;
}

}  // namespace mnemo
