// The QA task's forward pass as the paper describes it, for tests to compare the trainer's
// with (tests/core/test_mtn.cpp, tests/core/test_memory_training.cpp): training itself runs
// the task through core/train like every other (QaTaskSource, core/data/qa_task.h).
#pragma once
#include "core/data/qa_task.h"
#include "core/models/model.h"

#include <vector>

namespace mnemo::test {

// Reading then inference with memory fixed (paper §2.2.1): starting from
// model.initial_memory(B), steps through batch.reading carrying memory (skipped when the
// initial memory is empty: the no-memory baseline "simply skips the reading phase"), then
// steps every query chunk with the memory after reading. The model must tag answers
// (logits [B, L, 2], e.g. MtnImpl with TaskHead::Kind::kAnswerTagging).
struct QaForward {
  torch::Tensor loss;         // sum of loss_sum / sum of loss_count over query chunks (graph kept)
  torch::Tensor answer_prob;  // [B, Lq] P(answer) for the query tokens, detached
  torch::Tensor labels;       // [B, Lq] int64
  torch::Tensor valid;        // [B, Lq] bool
};

inline QaForward qa_forward(MemoryModelImpl& model, const QaBatch& batch) {
  TORCH_CHECK(!batch.query.empty(), "qa_forward: the batch has no query chunk");
  MemoryState mem = model.initial_memory(batch.size);
  if (!mem.empty()) {
    for (const auto& in : batch.reading) mem = model.step(in, mem, nullptr).memory;
  }
  torch::Tensor sum, count;
  std::vector<torch::Tensor> probs, labels, valid;
  for (const auto& in : batch.query) {
    SegmentOutput out = model.step(in, mem, nullptr);  // memory fixed: out.memory is dropped
    TORCH_CHECK(out.logits.defined() && out.logits.dim() == 3 && out.logits.size(-1) == 2,
                "qa_forward: the model must tag answers (logits [B, L, 2]); for MTN models call "
                "set_task_head with TaskHead::Kind::kAnswerTagging");
    TORCH_CHECK(out.loss_sum.defined() && out.loss_count.defined(), "qa_forward: the model computed no loss");
    sum = sum.defined() ? sum + out.loss_sum : out.loss_sum;
    count = count.defined() ? count + out.loss_count : out.loss_count;
    probs.push_back(torch::softmax(out.logits.detach(), -1).select(-1, 1));
    labels.push_back(in.targets);
    valid.push_back(in.target_valid.logical_and(in.valid));
  }
  QaForward r;
  r.loss = sum / count.detach().clamp_min(1e-12);
  r.answer_prob = torch::cat(probs, 1);
  r.labels = torch::cat(labels, 1);
  r.valid = torch::cat(valid, 1);
  return r;
}

}  // namespace mnemo::test
