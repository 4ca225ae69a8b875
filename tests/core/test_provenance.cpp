// core/trace/provenance: the chain against a hand-computed Memformer example and against
// brute force on random traces; records from real model traces (Memformer writer, RMT
// rollout) through the engine's step observer, exact after a jump.
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/trace/provenance.h"
#include "core/trace/provenance_trace.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <random>
#include <thread>

using namespace mnemo;

namespace {
// A diagonal (Memformer) step from rows [self | tokens].
ProvenanceStep diag_step(int64_t seg, int64_t first, int slots, int tokens, std::vector<float> rows) {
  return memformer_provenance_step(seg, first, slots, tokens, 0, rows.data());
}

// Brute force in double: prov_t = C_t (... (C_0 e_init + S_0) ...) + S_t written as the sum
// over the segment s a share entered at: C_t C_{t-1} ... C_{s+1} S_s, and C_t ... C_0 for the
// initial memory — every product recomputed from scratch for every t.
struct Dense {
  int m;
  std::vector<double> a;  // m x m
};
Dense carry_matrix(const ProvenanceStep& p) {
  Dense d{p.slots, std::vector<double>(static_cast<size_t>(p.slots * p.slots), 0.0)};
  for (int i = 0; i < p.slots; ++i)
    for (int r = 0; r < p.slots; ++r)
      d.a[i * p.slots + r] = p.diagonal ? (i == r ? p.carry[i] : 0.0) : p.carry[i * p.slots + r];
  return d;
}
Dense mul(const Dense& x, const Dense& y) {
  Dense z{x.m, std::vector<double>(x.a.size(), 0.0)};
  for (int i = 0; i < x.m; ++i)
    for (int k = 0; k < x.m; ++k)
      for (int j = 0; j < x.m; ++j) z.a[i * x.m + j] += x.a[i * x.m + k] * y.a[k * x.m + j];
  return z;
}
Dense identity(int m) {
  Dense d{m, std::vector<double>(static_cast<size_t>(m * m), 0.0)};
  for (int i = 0; i < m; ++i) d.a[i * m + i] = 1.0;
  return d;
}

// Weights [m x N], initial [m], other [m] after step t, from normalised records 0..t.
void brute_force(const std::vector<ProvenanceStep>& rec, int64_t t, int64_t n_tokens, std::vector<double>* w,
                 std::vector<double>* init, std::vector<double>* other) {
  const int m = rec[0].slots;
  w->assign(static_cast<size_t>(m * n_tokens), 0.0);
  init->assign(m, 0.0);
  other->assign(m, 0.0);
  for (int64_t s = -1; s <= t; ++s) {
    Dense prod = identity(m);  // C_t ... C_{s+1}
    for (int64_t u = t; u > s; --u) prod = mul(prod, carry_matrix(rec[u]));
    if (s == -1) {
      for (int i = 0; i < m; ++i)
        for (int r = 0; r < m; ++r) (*init)[i] += prod.a[i * m + r];
      continue;
    }
    const auto& p = rec[s];
    for (int i = 0; i < m; ++i)
      for (int r = 0; r < m; ++r) {
        const double c = prod.a[i * m + r];
        for (int j = 0; j < p.tokens; ++j) (*w)[i * n_tokens + p.first_token + j] += c * p.source[r * p.tokens + j];
        (*other)[i] += c * p.other[r];
      }
  }
}

ProvenanceStep random_step(std::mt19937& rng, int64_t seg, int64_t first, int m, int tokens, bool diagonal) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  ProvenanceStep p;
  p.segment = seg;
  p.slots = m;
  p.first_token = first;
  p.tokens = tokens;
  p.diagonal = diagonal;
  p.carry.resize(diagonal ? m : m * m);
  for (auto& c : p.carry) c = u(rng) < 0.2f ? 0.f : u(rng);
  p.source.resize(static_cast<size_t>(m * tokens));
  for (auto& s : p.source) s = u(rng);
  p.other.resize(m);
  for (auto& o : p.other) o = u(rng) < 0.5f ? 0.f : 0.3f * u(rng);
  p.normalise();
  return p;
}

Document provenance_doc(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (i * 7) % 26));
  return make_document(s, "synthetic");
}
}  // namespace

TEST_CASE("provenance: a hand-computed 3-step, 2-slot Memformer chain") {
  // Two tokens per step; rows are [self | token, token] (mean over heads, rows sum to 1).
  ProvenanceChain chain(2, /*top_k=*/3);
  chain.record(diag_step(0, 0, 2, 2, {0.5f, 0.25f, 0.25f, /**/ 1.f, 0.f, 0.f}));
  chain.record(diag_step(1, 2, 2, 2, {0.5f, 0.5f, 0.f, /**/ 0.2f, 0.3f, 0.5f}));
  chain.record(diag_step(2, 4, 2, 2, {1.f, 0.f, 0.f, /**/ 0.5f, 0.f, 0.5f}));

  auto p0 = chain.at(0);
  REQUIRE(p0);
  CHECK(p0->tokens == 2);
  CHECK(p0->initial[0] == doctest::Approx(0.5));
  CHECK(p0->at(0, 0) == doctest::Approx(0.25));
  CHECK(p0->at(0, 1) == doctest::Approx(0.25));
  CHECK(p0->initial[1] == doctest::Approx(1.0));  // slot 1 kept m_0 whole

  auto p1 = chain.at(1);
  REQUIRE(p1);
  // slot 0: 0.5 x step 0 + 0.5 token 2
  CHECK(p1->initial[0] == doctest::Approx(0.25));
  CHECK(p1->at(0, 0) == doctest::Approx(0.125));
  CHECK(p1->at(0, 1) == doctest::Approx(0.125));
  CHECK(p1->at(0, 2) == doctest::Approx(0.5));
  CHECK(p1->at(0, 3) == doctest::Approx(0.0));
  // slot 1: 0.2 x m_0 + 0.3 token 2 + 0.5 token 3
  CHECK(p1->initial[1] == doctest::Approx(0.2));
  CHECK(p1->at(1, 2) == doctest::Approx(0.3));
  CHECK(p1->at(1, 3) == doctest::Approx(0.5));

  auto p2 = chain.at(2);
  REQUIRE(p2);
  CHECK(p2->tokens == 6);
  // slot 0 retained everything: unchanged
  CHECK(p2->initial[0] == doctest::Approx(0.25));
  CHECK(p2->at(0, 2) == doctest::Approx(0.5));
  CHECK(p2->at(0, 4) == doctest::Approx(0.0));
  // slot 1: half of step 1's provenance + 0.5 token 5
  CHECK(p2->initial[1] == doctest::Approx(0.1));
  CHECK(p2->at(1, 2) == doctest::Approx(0.15));
  CHECK(p2->at(1, 3) == doctest::Approx(0.25));
  CHECK(p2->at(1, 5) == doctest::Approx(0.5));
  // Top sources of slot 1, descending; every row sums to 1.
  CHECK(p2->top_of(1)[0].token == 5);
  CHECK(p2->top_of(1)[1].token == 3);
  CHECK(p2->top_of(1)[2].token == 2);
  CHECK(p2->top_of(1)[2].weight == doctest::Approx(0.15));
  for (int i = 0; i < 2; ++i) {
    double sum = p2->initial[i] + p2->other[i];
    for (int64_t t = 0; t < p2->tokens; ++t) sum += p2->at(i, t);
    CHECK(sum == doctest::Approx(1.0));
  }
  // Before the first step everything is initial memory.
  auto pm = chain.at(-1);
  REQUIRE(pm);
  CHECK(pm->initial[1] == 1.f);
}

TEST_CASE("provenance: cls columns are 'other', and an un-normalised row is normalised on record") {
  // [self | 2 tokens | cls]; slot 0 sums to 2 (scaled to 1).
  std::vector<float> rows = {0.4f, 0.6f, 0.4f, 0.6f, /**/ 0.f, 0.f, 0.f, 1.f};
  ProvenanceChain chain(2);
  chain.record(memformer_provenance_step(0, 0, 2, 2, 1, rows.data()));
  auto p = chain.at(0);
  REQUIRE(p);
  CHECK(p->initial[0] == doctest::Approx(0.2));
  CHECK(p->at(0, 0) == doctest::Approx(0.3));
  CHECK(p->other[0] == doctest::Approx(0.3));
  CHECK(p->other[1] == doctest::Approx(1.0));
}

TEST_CASE("provenance: incremental stepping, jumps and missing records against brute force") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 12; ++trial) {
    const int m = 1 + static_cast<int>(rng() % 4);
    const int steps = 1 + static_cast<int>(rng() % 10);
    const bool diagonal = trial % 2 == 0;
    std::vector<ProvenanceStep> rec;
    int64_t first = 0;
    for (int s = 0; s < steps; ++s) {
      const int len = 1 + static_cast<int>(rng() % 4);
      rec.push_back(random_step(rng, s, first, m, len, diagonal));
      first += len;
    }
    ProvenanceChain chain(m, 3, /*checkpoint_every=*/3);
    for (const auto& r : rec) chain.record(r);
    // Forward one by one: exactly one update per step.
    for (int s = 0; s < steps; ++s) {
      const int64_t before = chain.updates();
      REQUIRE(chain.at(s));
      CHECK(chain.updates() == before + 1);
    }
    // Random jumps anywhere: always equal to brute force.
    for (int q = 0; q < 20; ++q) {
      const int64_t t = static_cast<int64_t>(rng() % steps);
      auto p = chain.at(t);
      REQUIRE(p);
      std::vector<double> w, init, other;
      brute_force(rec, t, p->tokens, &w, &init, &other);
      for (int i = 0; i < m; ++i) {
        CHECK(p->initial[i] == doctest::Approx(init[i]).epsilon(1e-4));
        CHECK(p->other[i] == doctest::Approx(other[i]).epsilon(1e-4));
        double sum = p->initial[i] + p->other[i];
        for (int64_t k = 0; k < p->tokens; ++k) {
          CHECK(p->at(i, k) == doctest::Approx(w[i * p->tokens + k]).epsilon(1e-4));
          sum += p->at(i, k);
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));
      }
    }
    // A jump is the same arithmetic as stepping: bit-identical states.
    ProvenanceChain stepped(m, 3, 3);
    for (const auto& r : rec) stepped.record(r);
    for (int s = 0; s < steps; ++s) stepped.at(s);
    CHECK(stepped.at(steps - 1)->weight == chain.at(steps - 1)->weight);
  }
  // A missing record between: no state, until it is recorded.
  std::mt19937 r2(7);
  ProvenanceChain gap(2);
  gap.record(random_step(r2, 0, 0, 2, 2, true));
  gap.record(random_step(r2, 2, 4, 2, 2, true));
  CHECK(gap.at(0));
  CHECK_FALSE(gap.at(2));
  gap.record(random_step(r2, 1, 2, 2, 2, true));
  CHECK(gap.at(2));
  // Replacing a record drops the states computed from it.
  auto before = gap.at(2)->weight;
  gap.record(random_step(r2, 1, 2, 2, 2, true));
  CHECK(gap.at(2)->weight != before);
}

TEST_CASE("provenance: kept states stay under the byte budget over a long run, and jumps stay exact") {
  // 4 entries x 8 tokens per step: the state after step t holds 4 x 8(t+1) floats. Kept every
  // 2 steps without a budget, 300 steps would keep 150 states, 4*8*4 * sum(2k+1) = 2.9 MB.
  std::mt19937 rng(99);
  const int m = 4, len = 8, steps = 300;
  const int64_t budget = 64 << 10;  // 64 KiB
  std::vector<ProvenanceStep> rec;
  for (int s = 0; s < steps; ++s) rec.push_back(random_step(rng, s, int64_t{s} * len, m, len, s % 3 != 0));
  ProvenanceChain bounded(m, 3, 2, budget), unbounded(m, 3, 2, int64_t{1} << 40);
  for (const auto& r : rec) {
    bounded.record(r);
    unbounded.record(r);
  }
  int64_t most = 0;
  for (int s = 0; s < steps; ++s) {
    const int64_t before = bounded.updates();
    REQUIRE(bounded.at(s));
    CHECK(bounded.updates() == before + 1);  // stepping forward still costs one update
    most = std::max(most, bounded.kept_bytes());
  }
  CHECK(most <= budget);
  CHECK(bounded.kept_bytes() > budget / 4);  // thinned, not emptied
  CHECK(bounded.checkpoint_spacing() > 2);
  unbounded.at(steps - 1);
  CHECK(unbounded.kept_bytes() > 2'000'000);
  CHECK(unbounded.checkpoint_spacing() == 2);
  // Jumps back and forth: bit-identical to the unbounded chain, and at most `spacing` updates.
  for (int q = 0; q < 40; ++q) {
    const int64_t t = static_cast<int64_t>(rng() % steps);
    const int64_t before = bounded.updates();
    auto a = bounded.at(t);
    auto b = unbounded.at(t);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->weight == b->weight);
    CHECK(a->initial == b->initial);
    CHECK(a->other == b->other);
    CHECK(bounded.updates() - before <= bounded.checkpoint_spacing());
  }
  // Replacing a record forgets the kept states after it, and their bytes.
  bounded.record(random_step(rng, 10, 80, m, len, true));
  CHECK(bounded.kept_bytes() <= int64_t{4} * m * len * 11);
  bounded.clear();
  CHECK(bounded.kept_bytes() == 0);
  CHECK(bounded.checkpoint_spacing() == 2);
}

TEST_CASE("provenance: records that do not fit are refused") {
  ProvenanceChain chain(2);
  ProvenanceStep bad = diag_step(0, 0, 3, 1, {1.f, 0.f, 1.f, 0.f, 1.f, 0.f});
  CHECK_THROWS_WITH_AS(chain.record(bad), doctest::Contains("3 entries, the chain 2"), std::invalid_argument);
  ProvenanceStep neg = diag_step(0, 0, 2, 1, {1.f, -1.f, 1.f, 0.f});
  CHECK_THROWS_WITH_AS(chain.record(neg), doctest::Contains("negative or non-finite"), std::invalid_argument);
  ProvenanceStep size = diag_step(0, 0, 2, 1, {1.f, 0.f, 1.f, 0.f});
  size.source.pop_back();
  CHECK_THROWS_AS(chain.record(size), std::invalid_argument);
}

TEST_CASE("provenance: MTN kept entries are their source tokens") {
  auto p = kept_entry_provenance(3, {5, -1, 2}, 8, 2);
  CHECK(p.at(0, 5) == 1.f);
  CHECK(p.initial[1] == 1.f);
  CHECK(p.top_of(2)[0].token == 2);
  CHECK(p.top_of(2)[1].token == -1);
}

TEST_CASE("provenance: RMT rollout of a hand-made 2-layer map") {
  // m = 1, one token: T = 3 = [read | token | write]. Write row of both layers:
  // layer 0 A = [0.2, 0.3, 0.5] -> Â = [0.1, 0.15, 0.75];
  // layer 1 A = [0.5, 0.5, 0.0] -> Â = [0.25, 0.25, 0.5].
  // Read and token rows attend to themselves (Â = I there), so
  // R[write] = Â1[write] · Â0 = 0.25 e_read + 0.25 e_tok + 0.5 Â0[write]
  //          = [0.25 + 0.05, 0.25 + 0.075, 0.375] = [0.3, 0.325, 0.375].
  auto eye = torch::eye(3).unsqueeze(0).unsqueeze(0);
  auto a0 = eye.clone(), a1 = eye.clone();
  a0[0][0][2] = torch::tensor({0.2f, 0.3f, 0.5f});
  a1[0][0][2] = torch::tensor({0.5f, 0.5f, 0.0f});
  Trace tr;
  tr.tensors["rmt.attn.0"] = a0;
  tr.tensors["rmt.attn.1"] = a1;
  auto p = provenance_step_from_trace(tr, "rmt", 4, 10, 1, 1);
  REQUIRE(p);
  CHECK_FALSE(p->diagonal);
  CHECK(p->carry[0] == doctest::Approx(0.3 + 0.375));
  CHECK(p->source[0] == doctest::Approx(0.325));
  CHECK(p->other[0] == doctest::Approx(0.0).epsilon(1e-6));
  CHECK(p->first_token == 10);
  // Missing keys or a model without a chain: nothing.
  CHECK_FALSE(provenance_step_from_trace(Trace{}, "rmt", 0, 0, 1, 1));
  CHECK_FALSE(provenance_step_from_trace(tr, "trxl", 0, 0, 1, 1));
}

TEST_CASE("provenance: real models through the engine's step observer are exact after a jump") {
  for (std::string kind : {"memformer", "rmt", "trxl-rmt"}) {
    CAPTURE(kind);
    auto cfg = kind == "memformer" ? test::tiny_memformer() : test::tiny_decoder(kind);
    auto model = make_model(cfg, 5);
    Document doc = provenance_doc(cfg.segment_len * 5 + 3);
    auto keys = provenance_trace_keys(kind);
    REQUIRE_FALSE(keys.empty());
    const int slots = static_cast<int>(cfg.slots);
    auto observe = [&](ProvenanceChain* chain, Engine* e) {
      e->set_step_observer(keys, [chain, e, kind](int64_t i, const Trace& tr) {
        const int64_t first = i * e->segmenter().segment_len();
        const int64_t len = std::min(e->segmenter().segment_len(), e->document().size() - first);
        auto p = provenance_step_from_trace(tr, kind, i, first, len, e->segmenter().segment_len());
        REQUIRE(p);
        chain->record(*p);
      });
    };
    // A: step forward one at a time. B: one jump to the last segment.
    Engine ea(model, doc, cfg.segment_len, TraceSpec::of(keys));
    ProvenanceChain ca(slots);
    observe(&ca, &ea);
    for (int64_t s = 0; s < ea.num_segments(); ++s) REQUIRE(ea.step_forward());
    Engine eb(model, doc, cfg.segment_len, TraceSpec::none());  // only the observer's keys
    ProvenanceChain cb(slots);
    observe(&cb, &eb);
    REQUIRE(eb.jump(eb.num_segments() - 1));
    const int64_t last = ea.num_segments() - 1;
    auto pa = ca.at(last), pb = cb.at(last);
    REQUIRE(pa);
    REQUIRE(pb);
    CHECK(pa->tokens == doc.size());
    REQUIRE(pa->weight.size() == pb->weight.size());
    for (size_t i = 0; i < pa->weight.size(); ++i) CHECK(pa->weight[i] == doctest::Approx(pb->weight[i]).epsilon(1e-5));
    for (int i = 0; i < slots; ++i) {
      double sum = pa->initial[i] + pa->other[i];
      for (int64_t t = 0; t < pa->tokens; ++t) sum += pa->at(i, t);
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));
      if (kind == "trxl-rmt") continue;
      CHECK(pa->other[i] >= 0.f);
    }
    if (kind == "rmt") {
      for (int i = 0; i < slots; ++i) CHECK(pa->other[i] == doctest::Approx(0.0).epsilon(1e-5));
    }
  }
}

TEST_CASE("make_model: two threads building models at once get the seed's weights (side by side)") {
  auto cfg = test::tiny_memformer();
  const auto ref = named_weights(*make_model(cfg, 7));
  for (int round = 0; round < 10; ++round) {
    MemoryModel a, b;
    std::thread ta([&] { a = make_model(cfg, 7); });
    std::thread tb([&] { b = make_model(cfg, 7); });
    ta.join();
    tb.join();
    for (const MemoryModel* m : {&a, &b}) {
      const auto w = named_weights(**m);
      REQUIRE(w.size() == ref.size());
      for (size_t i = 0; i < w.size(); ++i) CHECK(torch::equal(w[i].second, ref[i].second));
    }
  }
}
