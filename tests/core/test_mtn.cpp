// Memory Transformer Network (docs/models.md#mtn): keep_m_max, importance in the attention logits,
// the naive-memory and no-memory baselines, the synthetic QA task and its metrics, the CLI.
#include "core/data/document.h"
#include "core/data/qa_metrics.h"
#include "core/data/qa_task.h"
#include "core/data/tokenizer.h"
#include "core/engine/engine.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "families/mtn/core/model.h"
#include "tests/support/helpers.h"
#include "tests/support/qa_forward.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

using namespace mnemo;

namespace {

ModelConfig tiny_mtn(const std::string& kind = "mtn", int64_t slots = 4, int64_t len = 8) {
  ModelConfig c;
  c.model = kind;
  c.slots = slots;
  c.segment_len = len;
  c.dim = 16;
  c.heads = 2;
  c.ff = 32;
  c.n1_layers = 1;
  c.n2_layers = 2;
  return c;
}

std::shared_ptr<MtnImpl> make_mtn(const std::string& kind = "mtn", uint64_t seed = 1, ModelConfig cfg = tiny_mtn()) {
  cfg.model = kind;
  auto m = std::dynamic_pointer_cast<MtnImpl>(make_model(cfg, seed));
  REQUIRE(m);
  return m;
}

SegmentInput chunk(int64_t len, uint64_t seed, int64_t batch = 1) {
  auto g = torch::make_generator<at::CPUGeneratorImpl>(seed);
  SegmentInput in;
  in.tokens = torch::randint(0, 256, {batch, len}, g, torch::kInt64);
  in.valid = torch::ones({batch, len}, torch::kBool);
  return in;
}

// Next-token targets within the chunk (what the engine gives).
SegmentInput with_lm_targets(SegmentInput in) {
  const int64_t l = in.tokens.size(1);
  in.targets = in.tokens.roll(-1, 1);
  in.target_valid = in.valid.roll(-1, 1);
  in.target_valid.select(1, l - 1).fill_(false);
  return in;
}

MemoryState read_chunks(MtnImpl& m, int64_t n, int64_t len, uint64_t seed) {
  MemoryState mem = m.initial_memory(1);
  for (int64_t i = 0; i < n; ++i) mem = m.step(chunk(len, seed + static_cast<uint64_t>(i)), mem, nullptr).memory;
  return mem;
}

using test::run_cli;


}  // namespace

TEST_CASE("keep_m_max keeps the m largest importances with their embeddings, sources and ages") {
  // Candidates 0..5; candidate 5 has the largest score but is not ok (an empty entry).
  auto emb = torch::tensor({0.f, 0.f, 1.f, 10.f, 2.f, 20.f, 3.f, 30.f, 4.f, 40.f, 5.f, 50.f}).view({1, 6, 2});
  auto imp = torch::tensor({3.f, 1.f, 3.f, 2.f, 5.f, 7.f}).view({1, 6});
  auto ok = torch::tensor({true, true, true, true, true, false}).view({1, 6});
  auto src = torch::tensor({10, 11, 12, 13, 14, 15}, torch::kInt64).view({1, 6});
  auto age = torch::tensor({0, 1, 2, 3, 4, 5}, torch::kInt64).view({1, 6});
  auto k = keep_m_max(emb, imp, ok, src, age, 3);
  // 5 (index 4), then the tie 3 = 3 resolved by the lower index: 0 before 2.
  CHECK(torch::equal(k.index, torch::tensor({4, 0, 2}, torch::kInt64).view({1, 3})));
  CHECK(torch::equal(k.importance, torch::tensor({5.f, 3.f, 3.f}).view({1, 3})));
  CHECK(torch::equal(k.source, torch::tensor({14, 10, 12}, torch::kInt64).view({1, 3})));
  CHECK(torch::equal(k.age, torch::tensor({4, 0, 2}, torch::kInt64).view({1, 3})));
  CHECK(torch::equal(k.embeddings, torch::tensor({4.f, 40.f, 0.f, 0.f, 2.f, 20.f}).view({1, 3, 2})));

  // All equal: index order. Several rows are independent.
  auto flat = torch::ones({2, 5});
  flat[1][3] = 2.f;
  auto s2 = torch::arange(5, torch::kInt64).repeat({2, 1});
  auto k2 = keep_m_max(torch::zeros({2, 5, 1}), flat, torch::ones({2, 5}, torch::kBool), s2, s2, 3);
  CHECK(torch::equal(k2.index, torch::tensor({0, 1, 2, 3, 0, 1}, torch::kInt64).view({2, 3})));

  // Fewer ok candidates than slots: the rest are empty.
  auto k3 = keep_m_max(emb, imp, torch::tensor({false, true, false, false, false, false}).view({1, 6}), src, age, 2);
  CHECK(torch::equal(k3.index, torch::tensor({1, -1}, torch::kInt64).view({1, 2})));
  CHECK(torch::equal(k3.source, torch::tensor({11, -1}, torch::kInt64).view({1, 2})));
  CHECK(torch::equal(k3.age, torch::tensor({1, -1}, torch::kInt64).view({1, 2})));
  CHECK(k3.importance[0][1].item<float>() == 0.f);
  CHECK(k3.embeddings[0][1].abs().sum().item<float>() == 0.f);

  // Differentiable at the kept positions only.
  auto e = emb.clone().requires_grad_(true);
  auto i = imp.clone().requires_grad_(true);
  auto k4 = keep_m_max(e, i, ok, src, age, 3);
  (k4.embeddings.sum() + k4.importance.sum()).backward();
  CHECK(torch::equal(i.grad(), torch::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).view({1, 6})));
  CHECK(torch::equal(e.grad().sum(-1), torch::tensor({2.f, 0.f, 2.f, 0.f, 2.f, 0.f}).view({1, 6})));
}

TEST_CASE("mtn step: kept entries are the rows of e with the largest V_I.e + b_I, sources are token indices") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn", 3);
  MemoryState mem = m->initial_memory(1);
  CHECK(torch::equal(mem.at("source"), torch::full({1, 4}, -1, torch::kInt64)));
  for (int step = 0; step < 3; ++step) {
    Tracer tr(TraceSpec::all());
    auto out = m->step(chunk(8, 20 + static_cast<uint64_t>(step)), mem, &tr);
    const auto& t = tr.trace();
    auto e = t.at(keys::kMtnOutput);              // [1, 4 + 8, 16]
    auto idx = t.at(keys::kMtnKeptIndex)[0];       // [4]
    auto cand_src = t.at(keys::kMtnCandidateSource)[0];
    auto imp = t.at(keys::kMtnImportance)[0];
    CHECK(e.sizes() == torch::IntArrayRef({1, 12, 16}));
    CHECK(imp.sizes() == torch::IntArrayRef({12}));
    // Recompute the importance of every candidate by hand.
    auto hand = torch::matmul(e[0], m->importance_v) + m->importance_b;
    auto ok = cand_src >= 0;
    CHECK(test::max_abs_diff(imp.masked_select(ok), hand.masked_select(ok)) < 1e-5);
    // Every kept entry is a real candidate, and nothing left out beats it.
    const int64_t n_ok = ok.sum().item<int64_t>();
    CHECK(n_ok == (step == 0 ? 8 : 12));
    auto kept_imp = out.memory.at("importance")[0];
    for (int64_t s = 0; s < 4; ++s) {
      const int64_t c = idx[s].item<int64_t>();
      REQUIRE(c >= 0);
      CHECK(torch::equal(out.memory.at("embeddings")[0][s], e[0][c]));
      CHECK(out.memory.at("source")[0][s].item<int64_t>() == cand_src[c].item<int64_t>());
      CHECK(kept_imp[s].item<float>() == imp[c].item<float>());
    }
    auto left = ok.clone();
    left.index_fill_(0, idx, false);
    if (left.any().item<bool>()) CHECK(imp.masked_select(left).max().item<float>() <= kept_imp.min().item<float>());
    // Chunk token j of chunk `step` is document token 8 * step + j.
    for (int64_t j = 0; j < 8; ++j) CHECK(cand_src[4 + j].item<int64_t>() == 8 * step + j);
    CHECK(out.memory.at("tokens_read")[0].item<int64_t>() == 8 * (step + 1));
    mem = out.memory;
  }
}

TEST_CASE("changing a memory entry's importance shifts that key's logits by exactly that amount, nothing else") {
  torch::NoGradGuard g;
  for (auto kind : {TaskHead::Kind::kLanguageModel, TaskHead::Kind::kAnswerTagging}) {
    CAPTURE(static_cast<int>(kind));
    auto m = make_mtn("mtn", 5);
    m->set_task_head({kind, 1.0, 1.0, "qa"});
    MemoryState mem = read_chunks(*m, 2, 8, 40);  // full memory (L = 8 >= m = 4)
    REQUIRE((mem.at("source") >= 0).all().item<bool>());
    auto in = chunk(8, 77);
    std::vector<torch::Tensor> a, b;
    m->set_logit_sink(&a);
    m->step(in, mem, nullptr);
    const int64_t i = 2;
    const float delta = 0.75f;
    MemoryState mem2 = mem.detached_clone();
    mem2.tensors["importance"][0][i] += delta;
    m->set_logit_sink(&b);
    m->step(in, mem2, nullptr);
    m->set_logit_sink(nullptr);
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    auto la = a[0][0], lb = b[0][0];  // first joint layer [H, T, T]
    // Bidirectional: [memory ; chunk]. Language model: [read memory ; chunk ; write memory],
    // and entry i is key i of the read copy and key m + L + i of the write copy.
    const bool lm = kind == TaskHead::Kind::kLanguageModel;
    const int64_t t = lm ? 4 + 8 + 4 : 4 + 8;
    CHECK(la.sizes() == torch::IntArrayRef({2, t, t}));
    auto fin = torch::isfinite(la);
    CHECK(torch::equal(fin, torch::isfinite(lb)));  // the same keys are masked
    auto diff = (lb - la).masked_fill(fin.logical_not(), 0.0);
    std::vector<int64_t> cols{i};
    if (lm) cols.push_back(4 + 8 + i);
    auto seen = torch::zeros({2, t}, torch::kInt64);
    for (int64_t c : cols) {
      auto col = diff.select(-1, c);
      auto col_fin = fin.select(-1, c);
      seen += col_fin.to(torch::kInt64);
      CHECK(test::max_abs_diff(col.masked_select(col_fin), torch::full({col_fin.sum().item<int64_t>()}, delta)) < 1e-5);
      diff.select(-1, c).zero_();
    }
    CHECK(torch::equal(seen, torch::ones({2, t}, torch::kInt64)));  // every query row reads entry i once
    CHECK(diff.abs().max().item<float>() == 0.f);                   // and nothing else moved
  }
}

TEST_CASE("an empty memory entry is masked: its importance and embedding change nothing") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn", 6, tiny_mtn("mtn", 6, 4));  // 6 slots, chunks of 4: one chunk leaves 2 empty
  MemoryState mem = read_chunks(*m, 1, 4, 3);
  REQUIRE((mem.at("source") < 0).sum().item<int64_t>() == 2);
  auto in = chunk(4, 8);
  auto a = m->step(in, mem, nullptr);
  MemoryState mem2 = mem.detached_clone();
  auto empty = mem2.tensors["source"][0] < 0;
  const int64_t e0 = empty.nonzero()[0][0].item<int64_t>();
  mem2.tensors["importance"][0][e0] = 100.f;
  mem2.tensors["embeddings"][0][e0] = torch::randn({16}) * 5;
  auto b = m->step(in, mem2, nullptr);
  CHECK(torch::equal(a.logits, b.logits));
}

TEST_CASE("gradients reach V_I and b_I through the attention of the next chunk") {
  auto m = make_mtn("mtn", 7);
  auto c1 = chunk(8, 1), c2 = with_lm_targets(chunk(8, 2));
  {
    m->zero_grad();
    auto out1 = m->step(c1, m->initial_memory(1), nullptr);
    auto out2 = m->step(c2, out1.memory, nullptr);
    out2.loss.backward();
    REQUIRE(m->importance_v.grad().defined());
    CHECK(m->importance_v.grad().abs().sum().item<double>() > 0);
    CHECK(m->importance_b.grad().abs().sum().item<double>() > 0);
  }
  {
    // With the memory detached the only path from V_I to the loss is cut: no gradient.
    m->zero_grad();
    auto out1 = m->step(c1, m->initial_memory(1), nullptr);
    MemoryState cut = out1.memory.detached_clone();
    auto out2 = m->step(c2, cut, nullptr);
    out2.loss.backward();
    CHECK((!m->importance_v.grad().defined() || m->importance_v.grad().abs().sum().item<double>() == 0));
  }
  {
    // b_I's gradient matches a central finite difference (double precision).
    m->to(torch::kFloat64);
    auto loss_at = [&](double b) {
      torch::NoGradGuard g;
      m->importance_b.fill_(b);
      auto out1 = m->step(c1, m->initial_memory(1), nullptr);
      return m->step(c2, out1.memory, nullptr).loss.item<double>();
    };
    const double b0 = 0.3, h = 1e-5;
    const double numeric = (loss_at(b0 + h) - loss_at(b0 - h)) / (2 * h);
    {
      torch::NoGradGuard g;
      m->importance_b.fill_(b0);
    }
    m->zero_grad();
    auto out1 = m->step(c1, m->initial_memory(1), nullptr);
    m->step(c2, out1.memory, nullptr).loss.backward();
    const double analytic = m->importance_b.grad().item<double>();
    CAPTURE(numeric);
    CAPTURE(analytic);
    CHECK(std::abs(analytic) > 1e-6);
    CHECK(analytic == doctest::Approx(numeric).epsilon(1e-4));
  }
}

TEST_CASE("embeddings: two reserved dimensions are zero for tokens, one for the naive <MEM> tokens") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn-naive", 2);
  auto x = m->embed(chunk(8, 3).tokens);
  CHECK(x.sizes() == torch::IntArrayRef({1, 8, 16}));
  CHECK(x.narrow(-1, 14, 2).abs().max().item<float>() == 0.f);
  auto mem = m->initial_memory(2).at("embeddings");
  CHECK(mem.sizes() == torch::IntArrayRef({2, 4, 16}));
  CHECK(torch::equal(mem.narrow(-1, 14, 2), torch::ones({2, 4, 2})));
  // Positions restart in every chunk: the same tokens embed the same in any chunk.
  auto pe = sinusoid_positions(3, 4);
  CHECK(pe[0][0].item<float>() == 0.f);
  CHECK(pe[0][1].item<float>() == 1.f);
  CHECK(pe[2][2].item<float>() == doctest::Approx(std::sin(2.0 / 100.0)));
  CHECK(pe[2][3].item<float>() == doctest::Approx(std::cos(2.0 / 100.0)));
}

TEST_CASE("naive baseline: the next memory is the output at the <MEM> positions") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn-naive", 4);
  MemoryState mem = m->initial_memory(1);
  for (int s = 0; s < 2; ++s) {
    Tracer tr(TraceSpec::of({keys::kMtnOutput}));
    auto out = m->step(chunk(8, 50 + static_cast<uint64_t>(s)), mem, &tr);
    auto e = tr.trace().at(keys::kMtnOutput);
    CHECK(torch::equal(out.memory.at("embeddings"), e.narrow(1, 0, 4)));
    CHECK_FALSE(torch::equal(out.memory.at("embeddings"), mem.at("embeddings")));
    mem = out.memory;
  }
  // What was read earlier reaches later chunks through that memory.
  auto after = [&](uint64_t first) {
    MemoryState s = m->initial_memory(1);
    s = m->step(chunk(8, first), s, nullptr).memory;
    return m->step(chunk(8, 99), s, nullptr).logits;
  };
  CHECK_FALSE(torch::equal(after(1), after(2)));
}

TEST_CASE("no-memory baseline: earlier chunks change nothing") {
  torch::NoGradGuard g;
  auto m = make_mtn("no-memory", 4);
  CHECK(m->initial_memory(1).empty());
  auto after = [&](uint64_t first) {
    MemoryState s = m->initial_memory(1);
    s = m->step(chunk(8, first), s, nullptr).memory;
    return m->step(chunk(8, 99), s, nullptr).logits;
  };
  CHECK(torch::equal(after(1), after(2)));
  // Through the engine: two documents that differ only in segment 0 give the same segment 2.
  std::string a(40, 'a'), b(40, 'a');
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>('k' + i);
  for (int i = 16; i < 40; ++i) a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)] = static_cast<char>('a' + i % 7);
  auto snap_of = [&](const std::string& kind, const std::string& text) {
    auto model = make_model(tiny_mtn(kind), 4);
    Engine e(model, make_document(text), 8, TraceSpec::all());
    return e.jump(2);
  };
  CHECK(torch::equal(snap_of("no-memory", a)->trace.at(keys::kLmLoss), snap_of("no-memory", b)->trace.at(keys::kLmLoss)));
  CHECK_FALSE(torch::equal(snap_of("mtn", a)->trace.at(keys::kLmLoss), snap_of("mtn", b)->trace.at(keys::kLmLoss)));
}

TEST_CASE("engine: kept sources are document tokens already read, age = chunks survived") {
  const int64_t len = 8;
  auto model = make_model(tiny_mtn("mtn", 6, len), 9);
  std::string text;
  for (int i = 0; i < 70; ++i) text.push_back(static_cast<char>('a' + (i * 5) % 26));
  Engine e(model, make_document(text), len, TraceSpec::all());
  for (int64_t i = 0; i < e.num_segments(); ++i) {
    auto snap = e.jump(i);
    REQUIRE(snap);
    CHECK_FALSE(snap->non_finite);
    auto src = snap->trace.at(keys::kMtnKeptSource)[0];
    auto age = snap->trace.at(keys::kMtnAge)[0];
    CHECK(snap->trace.at(keys::kMtnImportance).sizes() == torch::IntArrayRef({1, 6 + len}));
    CHECK(std::isfinite(snap->loss));  // next token within the chunk
    for (int64_t s = 0; s < 6; ++s) {
      const int64_t t = src[s].item<int64_t>();
      REQUIRE(t >= 0);  // 8 >= 6: full from the first chunk on
      CHECK(t < std::min<int64_t>((i + 1) * len, 70));
      CHECK(age[s].item<int64_t>() == i - t / len);
    }
    CHECK(torch::equal(e.memory_before(i + 1).at("source")[0], src));
  }
}

TEST_CASE("a batch row whose chunk is all padding keeps its memory - other rows move on") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn", 8);
  MemoryState mem = m->initial_memory(2);
  mem = m->step(chunk(8, 1, 2), mem, nullptr).memory;
  auto in = chunk(8, 2, 2);
  in.valid[1].fill_(false);
  auto out = m->step(in, mem, nullptr);
  for (const auto& [k, t] : mem.tensors) {
    CAPTURE(k);
    CHECK(torch::equal(out.memory.at(k)[1], t[1]));
    if (k != "embeddings") continue;
    CHECK_FALSE(torch::equal(out.memory.at(k)[0], t[0]));
  }
}

TEST_CASE("language modelling is causal - answer tagging is bidirectional") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn", 10);
  MemoryState mem = read_chunks(*m, 1, 8, 5);
  auto a = chunk(8, 6), b = a;
  b.tokens = a.tokens.clone();
  b.tokens[0][5] = (a.tokens[0][5].item<int64_t>() + 1) % 256;
  Tracer ta(TraceSpec::of({keys::kMtnOutput})), tb(TraceSpec::of({keys::kMtnOutput}));
  auto oa = m->step(a, mem, &ta), ob = m->step(b, mem, &tb);
  CHECK(torch::equal(oa.logits.narrow(1, 0, 5), ob.logits.narrow(1, 0, 5)));
  CHECK_FALSE(torch::equal(oa.logits.narrow(1, 5, 1), ob.logits.narrow(1, 5, 1)));
  // The write copy of the memory reads the whole chunk (so the next memory sees token 5)...
  CHECK_FALSE(torch::equal(ta.trace().at(keys::kMtnOutput).narrow(1, 0, 4), tb.trace().at(keys::kMtnOutput).narrow(1, 0, 4)));
  // ...and the naive memory, too, carries the chunk forward in language modelling.
  auto naive = make_mtn("mtn-naive", 10);
  auto na = naive->step(a, naive->initial_memory(1), nullptr), nb = naive->step(b, naive->initial_memory(1), nullptr);
  CHECK(torch::equal(na.logits.narrow(1, 0, 5), nb.logits.narrow(1, 0, 5)));
  CHECK_FALSE(torch::equal(na.memory.at("embeddings"), nb.memory.at("embeddings")));
  m->set_task_head({TaskHead::Kind::kAnswerTagging, 1.0, 1.0, "qa"});
  auto qa = m->step(a, mem, nullptr), qb = m->step(b, mem, nullptr);
  CHECK(qa.logits.sizes() == torch::IntArrayRef({1, 8, 2}));
  CHECK_FALSE(torch::equal(qa.logits.narrow(1, 0, 1), qb.logits.narrow(1, 0, 1)));
}

TEST_CASE("answer tagging loss is the class-weighted NLL") {
  torch::NoGradGuard g;
  auto m = make_mtn("mtn", 11);
  m->set_task_head({TaskHead::Kind::kAnswerTagging, 0.5, 4.0, "qa"});
  auto in = chunk(8, 3);
  in.targets = torch::tensor({0, 1, 1, 0, 0, 0, 1, 0}, torch::kInt64).view({1, 8});
  in.target_valid = torch::tensor({true, true, true, true, true, true, false, true}).view({1, 8});
  Tracer tr(TraceSpec::all());
  auto out = m->step(in, m->initial_memory(1), &tr);
  auto p = tr.trace().at(keys::kQaAnswerProb)[0].to(torch::kFloat64);
  double num = 0, den = 0;
  const int y[8] = {0, 1, 1, 0, 0, 0, 1, 0};
  for (int j = 0; j < 8; ++j) {
    if (j == 6) continue;
    const double w = y[j] ? 4.0 : 0.5;
    const double pj = p[j].item<double>();
    num += w * -std::log(y[j] ? pj : 1 - pj);
    den += w;
  }
  CHECK(out.loss.item<double>() == doctest::Approx(num / den).epsilon(1e-5));
  CHECK(out.loss_count.item<double>() == doctest::Approx(den));
  auto sm = torch::softmax(out.logits[0], -1).select(-1, 1).to(torch::kFloat64);
  CHECK(test::max_abs_diff(sm, p) < 1e-6);
  // Targets other than 0/1 are refused.
  in.targets[0][0] = 7;
  CHECK_THROWS(m->step(in, m->initial_memory(1), nullptr));
}

TEST_CASE("qa task: a fixed seed gives exactly this example") {
  QaTaskOptions o;
  o.seed = 7;
  o.chunk_len = 48;
  o.doc_chunks = 2;
  o.facts = 2;
  o.candidates = 2;
  QaTask task(o);
  auto e = task.example(QaSplit::kTrain, 0);
  CHECK(e.document == "vic lives in lima. max lives in hue. a bird sang. the sea was calm. rain fell all day.");
  CHECK(e.query == "where does max live? hue lima");
  CHECK(e.answer == "hue");
  CHECK(e.name == "max");
  CHECK(e.answer_begin == 21);
  CHECK(e.fact_begin == 19);
  std::vector<uint8_t> labels(29, 0);
  labels[21] = labels[22] = labels[23] = 1;
  CHECK(e.labels == labels);
}

TEST_CASE("qa task: labels mark exactly the answer bytes - splits and seeds are deterministic") {
  QaTaskOptions o;  // paper-like defaults: chunks of 48, 4 reading chunks, 3 facts, 3 candidates
  QaTask task(o);
  for (auto split : {QaSplit::kTrain, QaSplit::kValid, QaSplit::kTest}) {
    for (int64_t i = 0; i < 100; ++i) {
      auto e = task.example(split, i);
      CAPTURE(e.document);
      CAPTURE(e.query);
      CHECK(static_cast<int64_t>(e.document.size()) <= o.doc_chunks * o.chunk_len);
      CHECK(static_cast<int64_t>(e.document.size()) > (o.doc_chunks - 1) * o.chunk_len);
      CHECK(static_cast<int64_t>(e.query.size()) <= o.chunk_len);
      REQUIRE(e.labels.size() == e.query.size());
      for (size_t j = 0; j < e.labels.size(); ++j) {
        const bool in_answer = static_cast<int64_t>(j) >= e.answer_begin &&
                               static_cast<int64_t>(j) < e.answer_begin + static_cast<int64_t>(e.answer.size());
        CHECK(e.labels[j] == (in_answer ? 1 : 0));
      }
      CHECK(e.query.substr(static_cast<size_t>(e.answer_begin), e.answer.size()) == e.answer);
      CHECK(e.query.find(e.answer) == e.query.rfind(e.answer));  // listed once
      REQUIRE(static_cast<int64_t>(e.candidates.size()) == o.candidates);
      CHECK(e.candidates[static_cast<size_t>(e.answer_candidate)].first == e.answer_begin);
      CHECK(e.candidates[static_cast<size_t>(e.answer_candidate)].second ==
            e.answer_begin + static_cast<int64_t>(e.answer.size()));
      CHECK(e.candidates.back().second == static_cast<int64_t>(e.query.size()));
      CHECK(e.query.rfind("where does " + e.name + " live? ", 0) == 0);
      const std::string fact = e.name + " lives in " + e.answer + ".";
      CHECK(e.document.substr(static_cast<size_t>(e.fact_begin), fact.size()) == fact);
      CHECK(e.document.find(e.name + " lives in ") == static_cast<size_t>(e.fact_begin));  // one fact per name
    }
  }
  auto a = task.example(QaSplit::kTrain, 3), b = task.example(QaSplit::kTrain, 3);
  CHECK(a.document == b.document);
  CHECK(a.query == b.query);
  CHECK(task.example(QaSplit::kTrain, 0).document != task.example(QaSplit::kValid, 0).document);
  QaTaskOptions o2 = o;
  o2.seed = 2;
  CHECK(QaTask(o2).example(QaSplit::kTrain, 0).document != task.example(QaSplit::kTrain, 0).document);
  CHECK_THROWS_AS(task.example(QaSplit::kTest, o.test_size), std::out_of_range);
  // Options that cannot work are refused by name.
  QaTaskOptions bad = o;
  bad.candidates = 8;
  CHECK_THROWS_WITH_AS(QaTask{bad}, doctest::Contains("chunk_len"), ConfigError);
  bad = o;
  bad.facts = 12;
  bad.doc_chunks = 1;
  CHECK_THROWS_WITH_AS(QaTask{bad}, doctest::Contains("facts"), ConfigError);
  // Inverse-frequency weights.
  auto [w0, w1] = task.class_weights(64);
  const double p = task.answer_share(64);
  CHECK(p > 0.05);
  CHECK(p < 0.2);
  CHECK(w1 == doctest::Approx(1 / p));
  CHECK(w0 == doctest::Approx(1 / (1 - p)));
}

TEST_CASE("qa_pick_candidate picks the candidate with the largest mean P(answer)") {
  QaTaskOptions o;
  o.candidates = 3;
  auto e = QaTask(o).example(QaSplit::kTest, 4);
  REQUIRE(e.candidates.size() == 3);
  auto p = torch::zeros({48});
  CHECK(qa_pick_candidate(p, e) == 0);  // all equal: the first
  const int64_t other = (e.answer_candidate + 1) % 3;
  auto fill = [&](int64_t c, float v) {
    auto [b, en] = e.candidates[static_cast<size_t>(c)];
    p.narrow(0, b, en - b).fill_(v);
  };
  fill(e.answer_candidate, 0.6f);
  CHECK(qa_pick_candidate(p, e) == e.answer_candidate);
  fill(other, 0.7f);
  CHECK(qa_pick_candidate(p, e) == other);
  // The mean counts, not the peak: one byte at 0.9 among bytes at 0.6 loses to 0.7 everywhere
  // for a city of 4 bytes ((0.9 + 3 * 0.6) / 4 = 0.675).
  if (e.answer.size() == 4) {
    p[e.candidates[static_cast<size_t>(e.answer_candidate)].first] = 0.9f;
    CHECK(qa_pick_candidate(p, e) == other);
  }
}

TEST_CASE("qa batch holds the bytes, the labels on the query chunk, and stream offsets") {
  QaTaskOptions o;
  o.chunk_len = 48;
  o.doc_chunks = 3;
  o.facts = 2;
  o.candidates = 2;
  QaTask task(o);
  auto batch = task.batch(QaSplit::kValid, 5, 3);
  REQUIRE(batch.size == 3);
  REQUIRE(batch.reading.size() == 3);
  REQUIRE(batch.query.size() == 1);
  for (int64_t r = 0; r < 3; ++r) {
    auto e = task.example(QaSplit::kValid, 5 + r);
    for (int64_t t = 0; t < static_cast<int64_t>(e.document.size()); ++t) {
      const auto& in = batch.reading[static_cast<size_t>(t / 48)];
      CHECK(in.tokens[r][t % 48].item<int64_t>() == static_cast<unsigned char>(e.document[static_cast<size_t>(t)]));
      CHECK(in.offsets[r][t % 48][0].item<int64_t>() == t);
    }
    const auto& q = batch.query[0];
    CHECK(q.valid[r].sum().item<int64_t>() == static_cast<int64_t>(e.query.size()));
    CHECK(torch::equal(q.target_valid[r], q.valid[r]));
    CHECK(q.targets[r].sum().item<int64_t>() == static_cast<int64_t>(e.answer.size()));
    CHECK(q.targets[r][e.answer_begin].item<int64_t>() == 1);
    CHECK(q.offsets[r][0][0].item<int64_t>() == 3 * 48);
    CHECK_FALSE(batch.reading[0].targets.defined());
  }
}

TEST_CASE("qa metrics: recall, false-positive rate, pseudo precision and pseudo F1 by hand") {
  QaCounts c;
  c.add(torch::tensor({0.9f, 0.2f, 0.6f, 0.1f, 0.5f}), torch::tensor({1, 0, 1, 0, 1}, torch::kInt64),
        torch::tensor({true, true, true, true, false}));
  auto m = qa_metrics(c);
  CHECK(m.answers == 2);
  CHECK(m.others == 2);
  CHECK(m.recall == doctest::Approx(0.75));              // (0.9 + 0.6) / 2
  CHECK(m.false_positive_rate == doctest::Approx(0.15)); // (0.2 + 0.1) / 2
  CHECK(m.pseudo_precision == doctest::Approx(0.75 / 0.9));
  CHECK(m.pseudo_f1 == doctest::Approx(2 * 0.75 * (0.75 / 0.9) / (0.75 + 0.75 / 0.9)));  // 0.789474
  CHECK(m.pseudo_f1 == doctest::Approx(0.7894737));
  // The real precision weighs the false positives by r = negatives / positives.
  CHECK(qa_precision(0.75, 0.15, 3.0) == doctest::Approx(0.625));
  // Batches add up.
  QaCounts c2 = c;
  c2.add(c);
  CHECK(qa_metrics(c2).recall == doctest::Approx(0.75));
  CHECK(c2.answers == 4);
  // Edge cases.
  CHECK(qa_precision(0.0, 0.0) == 0.0);
  CHECK(qa_f1(0.0, 0.0) == 0.0);
  QaCounts none;
  none.add(torch::tensor({0.3f}), torch::tensor({0}, torch::kInt64), torch::tensor({true}));
  CHECK(std::isnan(qa_metrics(none).recall));
  CHECK(std::isnan(qa_metrics(none).pseudo_f1));
  CHECK(qa_metrics(none).false_positive_rate == doctest::Approx(0.3));
}

TEST_CASE("qa_forward: reading with memory, then the query with memory fixed") {
  QaTaskOptions o;
  o.chunk_len = 48;
  o.doc_chunks = 2;
  o.facts = 2;
  o.candidates = 2;
  QaTask task(o);
  auto batch = task.batch(QaSplit::kTrain, 0, 2);
  auto cfg = tiny_mtn("mtn", 8, 48);
  for (const char* kind : {"mtn", "mtn-naive", "no-memory"}) {
    CAPTURE(kind);
    auto m = make_mtn(kind, 12, cfg);
    CHECK_THROWS(test::qa_forward(*m, batch));  // still a language model
    auto [w0, w1] = task.class_weights(32);
    m->set_task_head({TaskHead::Kind::kAnswerTagging, w0, w1, "qa"});
    auto f = test::qa_forward(*m, batch);
    CHECK(std::isfinite(f.loss.item<double>()));
    CHECK(f.answer_prob.sizes() == torch::IntArrayRef({2, 48}));
    f.loss.backward();
    // Same as doing it by hand: read, then step the query from the memory after reading.
    torch::NoGradGuard g;
    MemoryState mem = m->initial_memory(2);
    for (const auto& in : batch.reading) mem = m->step(in, mem, nullptr).memory;
    auto out = m->step(batch.query[0], mem, nullptr);
    CHECK(out.loss.item<double>() == doctest::Approx(f.loss.item<double>()).epsilon(1e-5));
    QaCounts c;
    c.add(f.answer_prob, f.labels, f.valid);
    CHECK(c.answers == static_cast<int64_t>(task.example(QaSplit::kTrain, 0).answer.size() +
                                            task.example(QaSplit::kTrain, 1).answer.size()));
  }
}

TEST_CASE("cli: step --model mtn / mtn-naive / no-memory writes mtn traces and figures") {
  const std::string dir = test::temp_dir("mtn-cli");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  const std::string tiny = " --dim 16 --heads 2 --segment-len 16";
  auto r = run_cli("step --model mtn --slots 8 --doc " + doc + " --out " + dir + "/mtn --from 0 --to 3" + tiny);
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("warning") == std::string::npos);
  auto t = io::load_safetensors(dir + "/mtn/step-0003/trace.safetensors");
  std::map<std::string, torch::Tensor> tm(t.begin(), t.end());
  REQUIRE(tm.count("mtn.importance") == 1);
  CHECK(tm["mtn.importance"].sizes() == torch::IntArrayRef({1, 8 + 16}));
  REQUIRE(tm.count("mtn.kept_source") == 1);
  CHECK((tm["mtn.kept_source"].scalar_type() == torch::kInt64));
  CHECK(tm["mtn.kept_source"].sizes() == torch::IntArrayRef({1, 8}));
  CHECK(tm["mtn.kept_source"].max().item<int64_t>() < 4 * 16);
  CHECK(tm.count("mtn.age") == 1);
  CHECK(tm.count("lm.loss") == 1);
  for (const char* f : {"mtn_memory.png", "mtn_memory.svg", "mtn_memory.csv", "mtn_importance.png",
                        "mtn_importance.csv", "mtn_document.png", "mtn_attention.png"}) {
    CAPTURE(f);
    CHECK(test::file_exists(dir + "/mtn/step-0003/" + f));
  }
  for (const char* kind : {"mtn-naive", "no-memory"}) {
    CAPTURE(kind);
    auto k = run_cli(std::string("step --model ") + kind + " --slots 8 --doc " + doc + " --out " + dir + "/" + kind +
                    " --to 1 --format png,csv" + tiny);
    CAPTURE(k.output);
    CHECK(k.code == 0);
    CHECK(test::file_exists(dir + "/" + kind + "/step-0001/trace.safetensors"));
    CHECK(test::file_exists(dir + "/" + kind + "/step-0001/mtn_attention.png"));
  }
}

TEST_CASE("cli: mtn-qa trains the three models briefly and writes curves, results and figures") {
  const std::string dir = test::temp_dir("mtn-qa");
  {
    std::ofstream f(dir + "/qa.json");
    f << R"({"model": {"model": "mtn", "slots": 4, "segment_len": 48, "dim": 16, "heads": 2, "ff": 32,
                       "n1_layers": 1, "n2_layers": 1},
             "task": {"chunk_len": 48, "doc_chunks": 2, "facts": 2, "candidates": 2},
             "train": {"steps": 2, "batch": 2, "eval_every": 1, "eval_batches": 1}})";
  }
  auto r = run_cli("mtn-qa --config " + dir + "/qa.json --out " + dir + "/out --threads 1");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  // Each model is a normal training session (the preset runs `train` per model).
  CHECK(test::file_exists(dir + "/out/mtn/metrics.log"));
  CHECK(test::file_exists(dir + "/out/no-memory/manifest.json"));
  for (const char* f : {"curves.csv", "results.json", "pseudo_f1.png", "answer_prob.svg", "mtn.safetensors",
                        "no-memory.safetensors", "example-mtn/chunk-01/mtn_memory.png",
                        "example-mtn/chunk-02-query/answer_prob.png", "example-mtn/chunk-02-query/mtn_attention.png"}) {
    CAPTURE(f);
    CHECK(test::file_exists(dir + "/out/" + f));
  }
  CHECK_FALSE(test::file_exists(dir + "/out/example-mtn/chunk-02-query/mtn_memory.png"));  // memory fixed for the query
  // Bad configs are refused by field name, before anything is written.
  {
    std::ofstream f(dir + "/bad.json");
    f << R"({"model": {"model": "mtn", "segment_len": 48, "dim": 16, "heads": 2}, "task": {"facts": 0}})";
  }
  auto b = run_cli("mtn-qa --config " + dir + "/bad.json --out " + dir + "/bad");
  CHECK(b.code == 2);
  CHECK(b.output.find("--config '" + dir + "/bad.json': config field 'task.facts' = 0 is out of range 1..25") !=
        std::string::npos);
  CHECK_FALSE(test::file_exists(dir + "/bad"));
}

namespace {

// A membership task that needs the memory and nothing else: the reading chunk is `len`
// symbols out of 16; every query symbol is, with probability 1/2, one of them (label 1) or a
// symbol not in the reading chunk (label 0). Without the memory a query symbol says nothing
// about its label, so the best memoryless tagger is at 0.5 accuracy.
struct Membership {
  SegmentInput reading, query;
};

Membership membership_batch(int64_t batch, int64_t len, torch::Generator& g) {
  Membership b;
  const int64_t symbols = 16, base = 'a';
  auto read = torch::randint(0, symbols, {batch, len}, g, torch::kInt64);
  auto in_read = torch::zeros({batch, symbols}, torch::kBool);
  in_read.scatter_(1, read, true);
  auto query = torch::empty({batch, len}, torch::kInt64);
  auto labels = torch::zeros({batch, len}, torch::kInt64);
  auto coin = torch::rand({batch, len}, g);
  auto ra = read.accessor<int64_t, 2>();
  auto ia = in_read.accessor<bool, 2>();
  auto qa = query.accessor<int64_t, 2>();
  auto la = labels.accessor<int64_t, 2>();
  auto ca = coin.accessor<float, 2>();
  auto pick = torch::randint(0, 1 << 20, {batch, len}, g, torch::kInt64);
  auto pa = pick.accessor<int64_t, 2>();
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<int64_t> absent;
    for (int64_t s = 0; s < symbols; ++s)
      if (!ia[r][s]) absent.push_back(s);
    for (int64_t j = 0; j < len; ++j) {
      const bool take = ca[r][j] < 0.5f || absent.empty();
      qa[r][j] = take ? ra[r][pa[r][j] % len] : absent[static_cast<size_t>(pa[r][j]) % absent.size()];
      la[r][j] = take ? 1 : 0;
    }
  }
  b.reading.tokens = read + base;
  b.reading.valid = torch::ones({batch, len}, torch::kBool);
  b.reading.targets = torch::zeros({batch, len}, torch::kInt64);
  b.reading.target_valid = torch::zeros({batch, len}, torch::kBool);
  b.query.tokens = query + base;
  b.query.valid = torch::ones({batch, len}, torch::kBool);
  b.query.targets = labels;
  b.query.target_valid = torch::ones({batch, len}, torch::kBool);
  return b;
}

// Accuracy of tagging (P(answer) > 0.5) on n fresh examples, with the memory after reading or
// with the initial memory.
double membership_accuracy(MtnImpl& m, int64_t len, bool zero_memory, torch::Generator& g) {
  torch::NoGradGuard ng;
  m.eval();
  auto b = membership_batch(256, len, g);
  MemoryState mem = m.initial_memory(256);
  if (!zero_memory && !mem.empty()) mem = m.step(b.reading, mem, nullptr).memory;
  auto out = m.step(b.query, mem, nullptr);
  auto pred = out.logits.argmax(-1);
  m.train();
  return (pred == b.query.targets).to(torch::kFloat64).mean().item<double>();
}

}  // namespace

TEST_CASE("answer tagging: MTN learns a task only the memory can solve - no-memory cannot") {
  // A check that the QA path (reading step, memory fixed for the query, class-weighted loss)
  // lets the query read the memory and trains it: 300 Adam steps at lr 1e-3 (higher rates,
  // e.g. 3e-3, leave this model predicting one class for every token). (The naive memory,
  // which must compress the chunk into its <MEM> outputs, is still at chance after 300 steps.)
  const int64_t len = 8;
  for (std::string kind : {"mtn", "no-memory"}) {
    CAPTURE(kind);
    torch::manual_seed(3);
    auto cfg = tiny_mtn(kind, len, len);
    cfg.dim = 64;
    cfg.heads = 4;
    cfg.ff = 128;
    auto m = make_mtn(kind, 3, cfg);
    m->set_task_head({TaskHead::Kind::kAnswerTagging, 1.0, 1.0, "qa"});
    torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
    auto g = test::cpu_generator(7), ge = test::cpu_generator(8);
    m->train();
    for (int step = 0; step < 300; ++step) {
      auto b = membership_batch(32, len, g);
      MemoryState mem = m->initial_memory(32);
      if (!mem.empty()) mem = m->step(b.reading, mem, nullptr).memory;
      auto out = m->step(b.query, mem, nullptr);  // memory fixed for the query
      opt.zero_grad();
      out.loss.backward();
      opt.step();
    }
    const double acc = membership_accuracy(*m, len, false, ge), zeroed = membership_accuracy(*m, len, true, ge);
    MESSAGE(kind << ": accuracy " << acc << ", memory zeroed " << zeroed);
    if (kind == "no-memory") {
      CHECK(acc < 0.6);
    } else {
      CHECK(acc > 0.9);
      CHECK(zeroed < 0.65);
    }
  }
}

TEST_CASE("qa task: byte_label_warmup labels the first train examples by byte membership, nothing else") {
  auto cfg = nlohmann::json::parse(R"({"name": "qa", "chunk_len": 32, "doc_chunks": 1, "facts": 1, "candidates": 2,
                                       "fact_chunks": 1, "byte_label_warmup": 3, "train_size": 64})");
  QaTaskSource src(cfg);
  CHECK(src.to_json().at("byte_label_warmup") == 3);
  const std::vector<int64_t> idx = {0, 1, 2, 3, 4, 5};
  auto tb = src.batch(Split::kTrain, idx, torch::kCPU);
  auto y = tb.segments.back().targets;
  int64_t differ = 0;
  for (int64_t r = 0; r < 6; ++r) {
    auto ex = src.qa().example(QaSplit::kTrain, r);
    std::vector<int64_t> want(ex.labels.begin(), ex.labels.end());
    if (r < 3)
      for (auto [b, e] : ex.candidates)
        for (int64_t j = b; j < e; ++j) want[static_cast<size_t>(j)] = ex.document.find(ex.query[static_cast<size_t>(j)]) != std::string::npos;
    for (size_t j = 0; j < want.size(); ++j) {
      CHECK(y[r][static_cast<int64_t>(j)].item<int64_t>() == want[j]);
      differ += want[j] != ex.labels[j];
    }
  }
  CHECK(differ > 0);  // some distractor byte occurs in its document
  // Valid and test keep the task's labels.
  auto vb = src.batch(Split::kValid, {0, 1}, torch::kCPU);
  for (int64_t r = 0; r < 2; ++r) {
    auto ex = src.qa().example(QaSplit::kValid, r);
    for (size_t j = 0; j < ex.labels.size(); ++j) CHECK(vb.segments.back().targets[r][static_cast<int64_t>(j)].item<int64_t>() == ex.labels[j]);
  }
}
