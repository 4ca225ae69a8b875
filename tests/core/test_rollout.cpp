// core/train/rollout: the objective, full BPTT and exact truncation depth.
#include "core/models/factory.h"
#include "core/models/memformer.h"
#include "core/train/rollout.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

using namespace mnemo;

namespace {

// T segments of length L; token 200 appears only in segment 0; only segment `loss_at`
// has valid targets (Memformer: step t predicts segment t+1).
std::vector<SegmentInput> probe_segments(int64_t t_count, int64_t len, int64_t loss_at) {
  std::vector<SegmentInput> segs;
  auto g = torch::make_generator<at::CPUGeneratorImpl>(17);
  for (int64_t t = 0; t < t_count; ++t) {
    SegmentInput in;
    in.tokens = torch::randint(0, 128, {1, len}, g, torch::kInt64);
    if (t == 0) in.tokens[0][2] = 200;
    in.valid = torch::ones({1, len}, torch::kBool);
    in.next_tokens = torch::randint(0, 128, {1, len}, g, torch::kInt64);
    in.next_valid = torch::full({1, len}, t == loss_at, torch::kBool);
    segs.push_back(in);
  }
  return segs;
}

torch::Tensor grad_of_row(MemformerImpl& m, int64_t row) { return m.tok_emb->weight.grad()[row].clone(); }

}  // namespace

TEST_CASE("rollout: forward-only loss equals the token-weighted mean of the segments") {
  auto model = std::dynamic_pointer_cast<MemformerImpl>(make_model(test::tiny_memformer(), 3));
  auto segs = probe_segments(3, 8, 1);
  for (auto& s : segs) s.next_valid.fill_(true);
  segs[2].next_valid.narrow(1, 0, 4).fill_(false);
  auto r = run_rollout(*model, segs, model->initial_memory(1), RolloutOptions{Strategy::kBptt, -1, false});
  CHECK(r.loss_count == doctest::Approx(8 + 8 + 4));
  CHECK(r.loss == doctest::Approx(r.loss_sum / 20.0));
  CHECK(r.segment_loss_sum.size() == 3);
  model->zero_grad();
  auto rb = run_rollout(*model, segs, model->initial_memory(1), RolloutOptions{});
  CHECK(rb.loss == doctest::Approx(r.loss).epsilon(1e-6));
  CHECK(rb.final_memory.bit_equal(r.final_memory));
}

TEST_CASE("rollout: BPTT depth k reaches exactly k earlier segments") {
  // Only segment 3's loss counts; segment 0 alone holds token 200, so the gradient of its
  // embedding row is non-zero iff gradients flow 3 segments back through memory.
  auto model = std::dynamic_pointer_cast<MemformerImpl>(make_model(test::tiny_memformer(), 5));
  model->train();
  auto segs = probe_segments(4, 8, 3);
  std::vector<double> norms;
  for (int64_t depth : {0, 1, 2, 3, -1}) {
    model->zero_grad();
    auto mem0 = detach_memory(model->initial_memory(1));
    run_rollout(*model, segs, mem0, RolloutOptions{Strategy::kBptt, depth, true});
    norms.push_back(grad_of_row(*model, 200).norm().item<double>());
  }
  CHECK(norms[0] == 0.0);
  CHECK(norms[1] == 0.0);
  CHECK(norms[2] == 0.0);
  CHECK(norms[3] > 0.0);
  CHECK(norms[4] == doctest::Approx(norms[3]).epsilon(1e-5));
}

TEST_CASE("rollout: truncated BPTT with depth 1 equals a hand-built sum of two-segment graphs") {
  auto model = std::dynamic_pointer_cast<MemformerImpl>(make_model(test::tiny_memformer(), 7));
  auto segs = probe_segments(3, 8, -1);
  for (auto& s : segs) s.next_valid.fill_(true);
  auto mem0 = detach_memory(model->initial_memory(1));
  model->zero_grad();
  run_rollout(*model, segs, mem0, RolloutOptions{Strategy::kBptt, 1, true});
  std::vector<torch::Tensor> got;
  for (auto& p : model->parameters()) got.push_back(p.grad().clone());

  // Reference: J = sum_t loss_sum_t / N with loss_t seeing segments t-1..t only.
  model->zero_grad();
  std::vector<MemoryState> before{mem0};
  {
    torch::NoGradGuard g;
    for (size_t t = 0; t < segs.size(); ++t) before.push_back(detach_memory(model->step(segs[t], before.back(), nullptr).memory));
  }
  const double n = 24.0;
  torch::Tensor total;
  for (size_t t = 0; t < segs.size(); ++t) {
    MemoryState m = before[t == 0 ? 0 : t - 1];
    if (t > 0) m = model->step(segs[t - 1], m, nullptr).memory;
    auto out = model->step(segs[t], m, nullptr);
    total = total.defined() ? total + out.loss_sum / n : out.loss_sum / n;
  }
  total.backward();
  size_t i = 0;
  for (auto& p : model->parameters()) {
    CHECK(test::max_abs_diff(got[i], p.grad()) < 1e-6);
    ++i;
  }
}
