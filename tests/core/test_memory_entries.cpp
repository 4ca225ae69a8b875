// Memory entries and their ablation (core/models/model.h MemoryEntries, ablate_entries;
// core/engine/doc_score.h score_document_by_entry, segment_entry_effects, memory patching):
// per model family, what an entry is, that removing one replaces exactly its positions, that
// removing every entry is the reset (and zeroed) memory value for value and scores the
// document as score_document's reset (zeroed) does, and each entry's losses against a memory
// built by hand.
#include "core/data/document.h"
#include "core/engine/doc_score.h"
#include "core/models/factory.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace mnemo;

namespace {

const std::string kText = "It was the best of times, it was the worst of times; it was the age of wisdom, it was.";

ModelConfig entry_config(const std::string& kind) {
  if (kind == "memformer") return test::tiny_memformer(4, 8);
  if (kind == "mtn" || kind == "mtn-naive") {
    ModelConfig c;
    c.model = kind;
    c.slots = 4;
    c.segment_len = 8;
    c.dim = 16;
    c.heads = 2;
    c.ff = 32;
    c.n1_layers = 1;
    c.n2_layers = 2;
    return c;
  }
  ModelConfig c = test::tiny_decoder(kind, 3, 8);
  if (kind == "trxl") c.slots = 20;  // a cache of 20 positions: blocks of 8, the oldest of 4
  if (kind == "trxl-rmt") c.cache_len = 12;
  return c;
}

const std::vector<std::string> kFamilies = {"memformer", "rmt", "rmt-write-only", "trxl", "trxl-rmt", "mtn", "mtn-naive"};

// The memory carried into segment i (explicit stepping).
MemoryState carried_before(MemoryModelImpl& m, const Document& doc, int64_t L, int64_t i) {
  c10::InferenceMode g;
  Segmenter seg(&doc, L);
  MemoryState mem = m.initial_memory(1);
  for (int64_t k = 0; k < i; ++k) mem = m.step(document_segment_input(seg, k, m), mem, nullptr).memory;
  return mem;
}

}  // namespace

TEST_CASE("memory entries: per family, its slots, memory tokens, cache blocks or kept entries, labelled") {
  struct Want {
    std::string kind;
    int64_t count;
    std::string first, last;
  };
  for (const Want& w : std::vector<Want>{{"memformer", 4, "slot 0", "slot 3"},
                                         {"rmt", 3, "memory token 0", "memory token 2"},
                                         {"rmt-write-only", 3, "memory token 0", "memory token 2"},
                                         {"trxl", 3, "cache block 0 (positions 0..3)", "cache block 2 (positions 12..19)"},
                                         {"trxl-rmt", 5, "memory token 0", "cache block 1 (positions 4..11)"},
                                         {"mtn", 4, "kept entry 0", "kept entry 3"},
                                         {"mtn-naive", 4, "learned vector 0", "learned vector 3"},
                                         {"transformer", 0, "", ""}}) {
    CAPTURE(w.kind);
    auto m = make_model(entry_config(w.kind), 3);
    const MemoryEntries e = memory_entries(m->capabilities(), m->initial_memory(1), 8);
    CHECK(e.count() == w.count);
    if (w.count == 0) continue;
    CHECK(e.label(0) == w.first);
    CHECK(e.label(w.count - 1) == w.last);
    CHECK_THROWS_AS(e.label(w.count), std::out_of_range);
    // Every tensor of the state is one group's or shared.
    size_t keys = e.shared.size();
    for (const auto& g : e.groups) keys += g.keys.size();
    CHECK(keys == m->initial_memory(1).tensors.size());
  }
  // MTN's token counter belongs to no entry; write-only RMT's entries own its write-cache rows.
  auto mtn = make_model(entry_config("mtn"), 3);
  CHECK(memory_entries(mtn->capabilities(), mtn->initial_memory(1), 8).shared == std::vector<std::string>{"tokens_read"});
  auto wo = make_model(entry_config("rmt-write-only"), 3);
  CHECK(memory_entries(wo->capabilities(), wo->initial_memory(1), 8).groups.at(0).keys.size() == 2 + 2);  // memory, valid, 2 layers
}

TEST_CASE("ablate_entries: one entry's positions take the initial memory's (reset) or zeros - the rest is the carried "
          "memory - and every entry at once is the reset or zeroed memory value for value, per family") {
  const Document doc = make_document(kText);
  for (const std::string& kind : kFamilies) {
    CAPTURE(kind);
    auto m = make_model(entry_config(kind), 5);
    const MemoryState init = m->initial_memory(1);
    const MemoryState carried = carried_before(*m, doc, 8, 4);
    const MemoryEntries en = memory_entries(m->capabilities(), init, 8);
    REQUIRE(en.count() > 0);
    std::vector<int64_t> all;
    for (int64_t e = 0; e < en.count(); ++e) all.push_back(e);
    CHECK(ablate_entries(carried, init, en, all, MemoryAblation::kReset).bit_equal(init));
    CHECK(ablate_entries(carried, init, en, all, MemoryAblation::kZeroed)
              .bit_equal(ablated_memory(MemoryAblation::kZeroed, carried, init)));
    CHECK(ablate_entries(carried, init, en, {}, MemoryAblation::kReset).bit_equal(carried));
    for (int64_t e = 0; e < en.count(); ++e) {
      CAPTURE(e);
      const MemoryEntryGroup& g = en.group_of(e);
      const auto [b, end] = g.range(e - g.first);
      for (auto a : {MemoryAblation::kReset, MemoryAblation::kZeroed}) {
        const MemoryState got = ablate_entries(carried, init, en, {e}, a);
        for (const auto& [key, t] : got.tensors) {
          CAPTURE(key);
          const bool owned = std::find(g.keys.begin(), g.keys.end(), key) != g.keys.end();
          if (!owned) {
            CHECK(torch::equal(t, carried.at(key)));
            continue;
          }
          // Outside the entry: carried; inside: the initial memory's, or zeros (integers: initial).
          auto want = carried.at(key).clone();
          auto part = want.narrow(1, b, end - b);
          if (a == MemoryAblation::kZeroed && t.is_floating_point()) part.zero_();
          else part.copy_(init.at(key).narrow(1, b, end - b));
          CHECK(torch::equal(t, want));
        }
      }
    }
    CHECK_THROWS_AS(ablate_entries(carried, init, en, {en.count()}, MemoryAblation::kReset), std::out_of_range);
  }
}

TEST_CASE("score_document_by_entry: with every entry removed the document scores exactly as score_document's reset and "
          "zeroed, and the carried losses as its carried ones, per family") {
  const Document doc = make_document(kText);
  for (const std::string& kind : kFamilies) {
    CAPTURE(kind);
    auto m = make_model(entry_config(kind), 7);
    const DocumentEntryEffects fx =
        score_document_by_entry(*m, doc, 8, {MemoryAblation::kReset, MemoryAblation::kZeroed});
    const DocumentLosses with = score_document(*m, doc, 8, MemoryAblation::kCarried);
    const DocumentLosses reset = score_document(*m, doc, 8, MemoryAblation::kReset);
    const DocumentLosses zeroed = score_document(*m, doc, 8, MemoryAblation::kZeroed);
    REQUIRE(fx.segments.size() == static_cast<size_t>(segment_count(doc.size(), 8)));
    CHECK(fx.carried.nats_sum == with.nats_sum);
    CHECK(fx.carried.predicted == with.predicted);
    CHECK(fx.all_removed[0].nats_sum == reset.nats_sum);
    CHECK(fx.all_removed[1].nats_sum == zeroed.nats_sum);
    CHECK(fx.all_removed[0].bits_per_token() == reset.bits_per_token());
    CHECK(fx.all_removed[1].bits_per_token() == zeroed.bits_per_token());
    for (size_t t = 0; t < with.loss.size(); ++t) {
      CAPTURE(t);
      CHECK(std::isnan(fx.all_removed[0].loss[t]) == std::isnan(reset.loss[t]));
      if (!std::isnan(reset.loss[t])) CHECK(fx.all_removed[0].loss[t] == reset.loss[t]);
    }
    // Entry totals are the segments' sums; segment 0 removes nothing; the ranking is sorted.
    for (size_t a = 0; a < 2; ++a) {
      double all = 0;
      for (int64_t e = 0; e < fx.entries.count(); ++e) {
        double sum = 0;
        for (const auto& s : fx.segments) sum += s.bits_saved(a, e);
        CHECK(fx.entry_bits_saved[a][static_cast<size_t>(e)] == doctest::Approx(sum).epsilon(1e-12));
        CHECK(fx.segments[0].bits_saved(a, e) == 0.0);
      }
      for (const auto& s : fx.segments) all += s.all_bits_saved(a);
      CHECK(fx.all_bits_saved[a] == doctest::Approx(all).epsilon(1e-12));
      CHECK(fx.all_bits_saved[a] ==
            doctest::Approx((fx.all_removed[a].nats_sum - with.nats_sum) / std::log(2.0)).epsilon(1e-6));
      const auto r = fx.ranking(a);
      for (size_t k = 1; k < r.size(); ++k)
        CHECK(fx.entry_bits_saved[a][static_cast<size_t>(r[k - 1])] >= fx.entry_bits_saved[a][static_cast<size_t>(r[k])]);
    }
  }
}

TEST_CASE("segment_entry_effects: each entry's losses equal a step from a memory built by hand with that entry's rows "
          "replaced, per family") {
  const Document doc = make_document(kText);
  for (const std::string& kind : kFamilies) {
    CAPTURE(kind);
    auto m = make_model(entry_config(kind), 9);
    const int64_t i = 5;
    const MemoryState init = m->initial_memory(1);
    const MemoryState before = carried_before(*m, doc, 8, i);
    const MemoryEntries en = memory_entries(m->capabilities(), init, 8);
    const SegmentEntryEffects fx =
        segment_entry_effects(*m, doc, 8, i, before, init, en, {MemoryAblation::kReset, MemoryAblation::kZeroed});
    REQUIRE(fx.ablations.size() == 2);
    Segmenter seg(&doc, 8);
    c10::InferenceMode g;
    const SegmentInput in = document_segment_input(seg, i, *m);
    const torch::Tensor base = m->step(in, before, nullptr).token_loss;
    bool some_effect = false;
    for (int64_t e = 0; e < en.count(); ++e) {
      CAPTURE(e);
      // By hand: the entry's rows of every tensor it owns, from the family's own layout.
      MemoryState hand = before.detached_clone();
      const MemoryEntryGroup& gr = en.group_of(e);
      const auto [b, end] = gr.range(e - gr.first);
      for (auto& [key, t] : hand.tensors)
        if (t.dim() >= 2 && std::find(gr.keys.begin(), gr.keys.end(), key) != gr.keys.end())
          t.narrow(1, b, end - b).copy_(init.at(key).narrow(1, b, end - b));
      const torch::Tensor tl = m->step(in, hand, nullptr).token_loss;
      const double want = (tl.to(torch::kDouble) - base.to(torch::kDouble)).sum().item<double>() / std::log(2.0);
      CHECK(fx.bits_saved(0, e) == doctest::Approx(want).epsilon(1e-5).scale(1e-5));
      some_effect = some_effect || std::abs(want) > 1e-6;
    }
    CHECK(some_effect);  // the memory matters to a random model: the ablation changes the scores
    const torch::Tensor reset = m->step(in, init, nullptr).token_loss;
    CHECK(fx.all_bits_saved(0) ==
          doctest::Approx((reset.to(torch::kDouble) - base.to(torch::kDouble)).sum().item<double>() / std::log(2.0))
              .epsilon(1e-5).scale(1e-5));
  }
  // Cancelled between entries: no ablations.
  auto m = make_model(entry_config("rmt"), 9);
  const MemoryState init = m->initial_memory(1);
  const MemoryEntries en = memory_entries(m->capabilities(), init, 8);
  int asked = 0;
  const SegmentEntryEffects stopped = segment_entry_effects(*m, doc, 8, 3, carried_before(*m, doc, 8, 3), init, en,
                                                            {MemoryAblation::kReset}, [&] { return ++asked < 2; });
  CHECK(stopped.ablations.empty());
  CHECK(asked == 2);
}

TEST_CASE("memory patching: segment t of B from the memory after segment s of A equals an explicit stepping - B's own "
          "memory patched in is B carried - and segments out of range are refused") {
  const Document a = make_document("Ishmael sailed with Queequeg on the Pequod; Ahab hunted the whale.");
  const Document b = make_document(kText);
  for (const std::string& kind : kFamilies) {
    CAPTURE(kind);
    auto m = make_model(entry_config(kind), 11);
    const MemoryState pa = document_memory_after(*m, a, 8, 3);
    CHECK(pa.bit_equal(carried_before(*m, a, 8, 4)));
    const DocumentLosses got = score_document_patched(*m, b, 8, pa, 2);
    // Explicit: B's segments 0..1 carried, then segment 2 from A's memory.
    {
      c10::InferenceMode g;
      Segmenter seg(&b, 8);
      MemoryState mem = m->initial_memory(1);
      double sum = 0;
      for (int64_t i = 0; i < seg.num_segments(); ++i) {
        if (i == 2) mem = pa;
        SegmentOutput o = m->step(document_segment_input(seg, i, *m), mem, nullptr);
        if (o.token_loss.defined()) sum += o.token_loss.to(torch::kDouble).sum().item<double>();
        mem = o.memory;
      }
      CHECK(got.nats_sum == doctest::Approx(sum).epsilon(1e-6));
    }
    const DocumentLosses own = score_document_patched(*m, b, 8, carried_before(*m, b, 8, 2), 2);
    CHECK(own.nats_sum == score_document(*m, b, 8, MemoryAblation::kCarried).nats_sum);
    CHECK(got.nats_sum != own.nats_sum);
    CHECK_THROWS_AS(document_memory_after(*m, a, 8, segment_count(a.size(), 8)), std::out_of_range);
    CHECK_THROWS_AS(score_document_patched(*m, b, 8, pa, -1), std::out_of_range);
  }
  auto rmt = make_model(entry_config("rmt"), 1);
  auto mf = make_model(entry_config("memformer"), 1);
  CHECK_THROWS_AS(score_document_patched(*rmt, b, 8, mf->initial_memory(1), 0), std::invalid_argument);
}
