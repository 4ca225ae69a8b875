// Scoring a document (core/engine/doc_score.h): every token's loss against an explicit
// stepping with cross-entropy of the logits, per model family and memory ablation; the
// Engine steps the same inputs.
#include "core/data/document.h"
#include "core/engine/doc_score.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace mnemo;

namespace {

// Explicit: segment i's tokens [iL, iL+L); RMT/Tr-XL position j predicts token iL+j+1 (the
// last one the next segment's first token); Memformer position j predicts token (i+1)L+j.
std::vector<float> explicit_losses(MemoryModelImpl& m, const std::string& text, int64_t L, MemoryAblation a,
                                   bool next_segment) {
  torch::NoGradGuard g;
  m.eval();
  const auto n = static_cast<int64_t>(text.size());
  std::vector<float> loss(text.size(), std::nanf(""));
  const MemoryState init = m.initial_memory(1);
  MemoryState mem = init;
  auto ids = [&](int64_t first, int64_t len) {
    auto t = torch::full({1, L}, int64_t{0}, torch::kInt64);
    auto v = torch::zeros({1, L}, torch::kBool);
    for (int64_t j = 0; j < len; ++j) {
      t[0][j] = static_cast<int64_t>(static_cast<unsigned char>(text[static_cast<size_t>(first + j)]));
      v[0][j] = true;
    }
    return std::make_pair(t, v);
  };
  const int64_t segs = (n + L - 1) / L;
  for (int64_t i = 0; i < segs; ++i) {
    if (i > 0 && a == MemoryAblation::kReset) mem = init;
    if (i > 0 && a == MemoryAblation::kZeroed)
      for (auto& [k, v] : mem.tensors) v = v.is_floating_point() ? torch::zeros_like(v) : init.tensors.at(k).clone();
    const int64_t first = i * L, len = std::min(L, n - first);
    SegmentInput in;
    std::tie(in.tokens, in.valid) = ids(first, len);
    in.targets = torch::zeros({1, L}, torch::kInt64);
    in.target_valid = torch::zeros({1, L}, torch::kBool);
    for (int64_t j = 0; j < len && first + j + 1 < n; ++j) {
      in.targets[0][j] = static_cast<int64_t>(static_cast<unsigned char>(text[static_cast<size_t>(first + j + 1)]));
      in.target_valid[0][j] = true;
    }
    if (i + 1 < segs) std::tie(in.next_tokens, in.next_valid) = ids(first + L, std::min(L, n - first - L));
    auto out = m.step(in, mem, nullptr);
    mem = out.memory;
    if (!out.logits.defined()) continue;  // Memformer's last segment: nothing to predict
    const auto lp = torch::log_softmax(out.logits, -1);
    for (int64_t j = 0; j < L; ++j) {
      if (next_segment) {
        if (!in.next_tokens.defined() || !in.next_valid[0][j].item<bool>()) continue;
        loss[static_cast<size_t>(first + L + j)] = -lp[0][j][in.next_tokens[0][j].item<int64_t>()].item<float>();
      } else {
        if (!in.target_valid[0][j].item<bool>()) continue;
        loss[static_cast<size_t>(first + j + 1)] = -lp[0][j][in.targets[0][j].item<int64_t>()].item<float>();
      }
    }
  }
  return loss;
}

}  // namespace

TEST_CASE("score_document: each token's loss equals an explicit stepping, per family and memory ablation") {
  const std::string text = "Call me Ishmael. Some years ago, never mind how long precisely.";  // 63 bytes
  const Document doc = make_document(text);
  for (const std::string kind : {"rmt", "trxl", "transformer", "memformer"}) {
    CAPTURE(kind);
    const bool mf = kind == "memformer";
    ModelConfig c = mf ? test::tiny_memformer() : test::tiny_decoder(kind, 3, 8);
    if (mf) c.segment_len = 8;
    auto model = make_model(c, 5);
    for (auto a : {MemoryAblation::kCarried, MemoryAblation::kReset, MemoryAblation::kZeroed}) {
      CAPTURE(ablation_name(a));
      const DocumentLosses got = score_document(*model, doc, 8, a);
      const std::vector<float> want = explicit_losses(*model, text, 8, a, mf);
      REQUIRE(got.loss.size() == want.size());
      double sum = 0;
      int64_t count = 0;
      for (size_t t = 0; t < want.size(); ++t) {
        CAPTURE(t);
        CHECK(std::isnan(got.loss[t]) == std::isnan(want[t]));
        if (std::isnan(want[t])) continue;
        CHECK(got.loss[t] == doctest::Approx(want[t]).epsilon(1e-4));
        sum += want[t];
        ++count;
      }
      CHECK(got.predicted == count);
      CHECK(count == (mf ? 63 - 8 : 62));  // Memformer predicts from segment 1 on; the others every byte but the first
      CHECK(got.bits_per_token() == doctest::Approx(sum / static_cast<double>(count) / std::log(2.0)).epsilon(1e-5));
    }
  }
  // Progress can stop it: the losses cover the segments done.
  auto model = make_model(test::tiny_decoder("rmt", 3, 8), 5);
  bool complete = true;
  const DocumentLosses part = score_document(*model, doc, 8, MemoryAblation::kCarried,
                                             [](int64_t done, int64_t) { return done < 2; }, &complete);
  CHECK_FALSE(complete);
  CHECK(part.predicted == 16);
}
