// Scoring a document (core/engine/doc_score.h): every token's loss against an explicit
// stepping with cross-entropy of the logits, per model family and memory ablation; the
// Engine steps the same inputs.
#include "app/figures/benefit.h"
#include "app/figures/extract.h"
#include "core/data/document.h"
#include "core/engine/doc_score.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

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

TEST_CASE("memory benefit: the Engine's per-token losses with the memory reset and zeroed equal two explicit "
          "evaluations of the segment, per family - the step data and step --benefit's CSV carry their difference") {
  const std::string text = "It was the best of times, it was the worst of times; it was the age of wisdom.";
  const Document doc = make_document(text);
  for (const std::string kind : {"rmt", "trxl", "trxl-rmt", "memformer", "transformer"}) {
    CAPTURE(kind);
    const bool mf = kind == "memformer";
    ModelConfig c = mf ? test::tiny_memformer() : test::tiny_decoder(kind, 3, 8);
    c.segment_len = 8;
    auto model = make_model(c, 7);
    Engine engine(model, doc, 8, TraceSpec::of({keys::kLmLoss}));
    engine.set_memory_benefit(true);
    const bool has_memory = !engine.memory_before(0).empty();
    CHECK(has_memory == (kind != "transformer"));
    for (int64_t i : {0, 1, 3}) {
      CAPTURE(i);
      SnapshotPtr snap = engine.jump(i);
      REQUIRE(snap);
      CHECK(snap->trace.has(keys::kLmLossMemoryReset) == has_memory);
      CHECK(snap->trace.has(keys::kLmLossMemoryZeroed) == has_memory);
      if (!has_memory) continue;
      // Explicit: the same input from the initial memory and from zeros (segment 0: the initial memory).
      torch::NoGradGuard g;
      const SegmentInput in = document_segment_input(engine.segmenter(), i, *model);
      const MemoryState init = model->initial_memory(1);
      MemoryState zero = engine.memory_before(i);
      if (i > 0)
        for (auto& [k, v] : zero.tensors) v = v.is_floating_point() ? torch::zeros_like(v) : init.tensors.at(k).clone();
      else
        zero = init;
      auto reset_loss = model->step(in, init, nullptr).token_loss;
      auto zero_loss = model->step(in, zero, nullptr).token_loss;
      auto with_loss = model->step(in, engine.memory_before(i), nullptr).token_loss;
      CHECK(torch::allclose(snap->trace.at(keys::kLmLossMemoryReset), reset_loss, 1e-5, 1e-6));
      CHECK(torch::allclose(snap->trace.at(keys::kLmLossMemoryZeroed), zero_loss, 1e-5, 1e-6));
      CHECK(torch::allclose(snap->trace.at(keys::kLmLoss), with_loss, 1e-5, 1e-6));
      if (i == 0) CHECK(torch::allclose(reset_loss, with_loss));
      // The step data: one row per predicted token, benefit = (reset - with) / ln 2.
      const app::StepData st = app::make_step_data(*snap, doc, kind);
      const auto rows = app::memory_benefit(st);
      REQUIRE(rows.size() == st.token_losses.values.size());
      double total = 0;
      for (size_t j = 0; j < rows.size(); ++j) {
        const int64_t t = predicted_token(loss_target_of(kind), i, 8, static_cast<int64_t>(j));
        CHECK(rows[j].token == t);
        const float want = (reset_loss[0][static_cast<int64_t>(j)].item<float>() -
                            with_loss[0][static_cast<int64_t>(j)].item<float>()) / std::log(2.f);
        CHECK(rows[j].bits_vs_reset() == doctest::Approx(want).epsilon(1e-4));
        total += rows[j].bits_vs_reset();
      }
      CHECK(app::segment_benefit_bits(st) == doctest::Approx(total));
      // What the Document panel's benefit tint and tooltip read: the visited record's values.
      app::VisitedSegments visited;
      visited.set(i, std::make_shared<const app::SegmentRecord>(app::segment_record_of(st, nullptr)));
      for (const auto& row : rows) {
        const app::TokenLossAt at = app::token_loss_at(visited, 8, row.token);
        CHECK(at.segment == i);
        CHECK(at.loss_reset == row.loss_reset);
        CHECK(at.loss_zeroed == row.loss_zeroed);
      }
    }
  }
  // step --benefit writes the figure and the CSV; without it, neither.
  const std::string dir = test::temp_dir("benefit");
  {
    std::ofstream(dir + "/doc.txt") << text;
  }
  auto r = test::run_cli("step --doc " + dir + "/doc.txt --out " + dir + "/b --model rmt --segment-len 8 --benefit --to 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("memory saved") != std::string::npos);
  CHECK(test::path_exists(dir + "/b/step-0001/memory_benefit.png"));
  CHECK(test::path_exists(dir + "/b/step-0001/memory_benefit.svg"));
  const std::string csv = test::read_file(dir + "/b/step-0001/memory_benefit.csv");
  CHECK(csv.rfind("token,id,text,loss_bits,loss_reset_bits,loss_zeroed_bits,benefit_bits,benefit_zeroed_bits\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 9);  // header + 8 tokens (9..16)
  CHECK(csv.find("\n9,") != std::string::npos);
  auto plain = test::run_cli("step --doc " + dir + "/doc.txt --out " + dir + "/p --model rmt --segment-len 8 --to 1");
  REQUIRE(plain.code == 0);
  CHECK_FALSE(test::path_exists(dir + "/p/step-0001/memory_benefit.csv"));
}
