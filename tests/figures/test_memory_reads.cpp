// What a selected token read from the memory (app/figures/memory_reads.h), as the Document
// panel shows it, against an independent computation from the model's own trace per family:
// the token's row of the last layer's attention, mean over heads, on the memory columns of
// the documented layouts (memformer.read_attn.<l> [B, H, L, k]; rmt.attn.<l> over
// [read m | tokens Lp | write m]; trxl.attn.<l> over [cache c | tokens Lp]). What an entry
// held is the previous step's provenance record, entry by entry, or the cached token itself.
#include "app/figures/extract.h"
#include "app/figures/memory_reads.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/trace/keys.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace mnemo;
using namespace mnemo::app;

namespace {

const std::string kReadsText = "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.";

int last_layer(const Trace& tr, const std::string& prefix) {
  int l = -1;
  while (tr.has(prefix + std::to_string(l + 1))) ++l;
  return l;
}

// The expected row over memory entries of segment-local position j, from the raw trace.
std::vector<double> expected_row(const Trace& tr, const std::string& kind, int64_t lp, int64_t m, int64_t j,
                                 std::vector<int64_t>* entry_tokens, int64_t first) {
  std::vector<double> w;
  entry_tokens->clear();
  if (kind == "memformer") {
    const int l = last_layer(tr, "memformer.read_attn.");
    REQUIRE(l >= 0);
    auto row = tr.at("memformer.read_attn." + std::to_string(l))[0].to(torch::kFloat64).mean(0)[j];  // [k]
    for (int64_t e = 0; e < row.size(0); ++e) {
      w.push_back(row[e].item<double>());
      entry_tokens->push_back(-1);
    }
  } else if (kind == "rmt") {
    const int l = last_layer(tr, "rmt.attn.");
    REQUIRE(l >= 0);
    auto a = tr.at("rmt.attn." + std::to_string(l))[0].to(torch::kFloat64).mean(0);  // [2m + Lp, 2m + Lp]
    REQUIRE(a.size(0) == 2 * m + lp);
    for (int64_t e = 0; e < m; ++e) {
      w.push_back(a[m + j][e].item<double>());
      entry_tokens->push_back(-1);
    }
  } else {  // trxl: [cache c | tokens Lp]
    const int l = last_layer(tr, "trxl.attn.");
    REQUIRE(l >= 0);
    auto a = tr.at("trxl.attn." + std::to_string(l))[0].to(torch::kFloat64).mean(0);  // [Lp, c + Lp]
    const int64_t c = a.size(1) - lp;
    for (int64_t e = 0; e < c; ++e) {
      w.push_back(a[j][e].item<double>());
      entry_tokens->push_back(first - c + e);
    }
  }
  return w;
}

void check_reads(const std::string& kind) {
  CAPTURE(kind);
  const int64_t L = 16, m = 4;
  ModelConfig cfg = kind == "memformer" ? test::tiny_memformer(m, L) : test::tiny_decoder(kind, m, L);
  MemoryModel model = make_model(cfg, 11);
  Document doc = make_document(kReadsText, "ishmael.txt");
  Engine engine(model, doc, L, TraceSpec::all());
  engine.jump(0);
  SnapshotPtr snap = engine.jump(1);
  const StepData st = make_step_data(*snap, engine.document(), kind);
  REQUIRE(st.segment == 1);

  // What each entry held after segment 0: a record with known, distinct sources per entry.
  auto rec = std::make_shared<SegmentRecord>();
  rec->prov_top_k = 2;
  for (int e = 0; e < m; ++e) {
    rec->prov_top.push_back({e, 0.5f + 0.1f * static_cast<float>(e)});
    rec->prov_top.push_back({e + 5, 0.25f});
    rec->prov_initial.push_back(0.05f * static_cast<float>(e));
  }
  VisitedSegments visited{{0, rec}};

  int checked = 0;
  for (int64_t j = 0; j < st.length; ++j) {
    CAPTURE(j);
    const int64_t token = st.first_token + j;
    std::vector<int64_t> entry_tokens;
    const std::vector<double> want = expected_row(snap->trace, kind, L, m, j, &entry_tokens, st.first_token);
    const MemoryReads got = memory_reads(st, visited, token, 1000);
    REQUIRE_FALSE(got.empty());
    CHECK(got.token == token);
    REQUIRE(got.entries_total == static_cast<int>(want.size()));
    REQUIRE(got.top.size() == want.size());
    double share = 0;
    for (double x : want) share += x;
    CHECK(got.memory_share == doctest::Approx(share).epsilon(1e-5));
    if (kind == "memformer") CHECK(share == doctest::Approx(1.0).epsilon(1e-5));  // a read over the slots only
    CHECK(got.own_read == (kind == "memformer"));  // the panel then says so instead of a share of 100%
    // Descending, and every entry's weight as computed here.
    for (size_t i = 0; i < got.top.size(); ++i) {
      const MemoryRead& r = got.top[i];
      CAPTURE(r.entry);
      REQUIRE(r.entry >= 0);
      REQUIRE(r.entry < static_cast<int>(want.size()));
      CHECK(r.weight == doctest::Approx(want[static_cast<size_t>(r.entry)]).epsilon(1e-5));
      if (i > 0) CHECK(got.top[i - 1].weight >= r.weight);
      CHECK(r.token == entry_tokens[static_cast<size_t>(r.entry)]);
      if (kind == "trxl") {
        // A cache entry is the state of a document token of the previous segment.
        REQUIRE(r.holds.size() == 1);
        CHECK(r.holds[0].token == r.token);
        CHECK(r.token == st.first_token - static_cast<int64_t>(want.size()) + r.entry);
      } else {
        // A slot or memory token held what the previous step's provenance says, entry by entry.
        REQUIRE(r.holds.size() == 2);
        CHECK(r.holds[0].token == r.entry);
        CHECK(r.holds[0].weight == doctest::Approx(0.5 + 0.1 * r.entry));
        CHECK(r.holds[1].token == r.entry + 5);
        CHECK(r.initial_share == doctest::Approx(0.05 * r.entry));
      }
    }
    const auto argmax = std::max_element(want.begin(), want.end()) - want.begin();
    CHECK(got.top[0].weight == doctest::Approx(want[static_cast<size_t>(argmax)]).epsilon(1e-5));
    CHECK(memory_reads(st, visited, token, 2).top.size() == std::min<size_t>(2, want.size()));
    ++checked;
  }
  CHECK(checked == L);
  // Outside the step's segment: nothing.
  CHECK(memory_reads(st, visited, st.first_token - 1, 3).empty());
  if (kind == "memformer") {
    // ... but for Memformer the segment the step predicts (test case below), and nothing beyond.
    CHECK(memory_reads(st, visited, st.first_token + st.length, 3).predicted);
    CHECK(memory_reads(st, visited, st.first_token + st.length + st.memformer.decoder_rows(), 3).empty());
  } else {
    CHECK(memory_reads(st, visited, st.first_token + st.length, 3).empty());
  }
  // Without the previous step's record, a slot's holdings are unknown (a cache's are not).
  const MemoryReads bare = memory_reads(st, {}, st.first_token, 3);
  CHECK(bare.holds_known == (kind == "trxl"));
  if (kind != "trxl") {
    // The note says what to do, and following it works: with segment 0's record they are known.
    CHECK(bare.holds_note == "Step segment 0 (the one before) to see what the entries held.");
    CHECK(memory_reads(st, visited, st.first_token, 3).holds_known);
    // A model without provenance (write-only RMT): stepping would not help, and the note says so.
    auto no_prov = std::make_shared<SegmentRecord>();
    const MemoryReads none = memory_reads(st, {{0, no_prov}}, st.first_token, 3);
    CHECK_FALSE(none.holds_known);
    CHECK(none.holds_note.find("keeps no provenance") != std::string::npos);
    // Segment 0 computed but not shown (a jump): the chain's state after it gives the same
    // holdings as its visited record would; a state of another segment is not used.
    ProvenanceState before;
    before.segment = 0;
    before.slots = static_cast<int>(m);
    before.top_k = rec->prov_top_k;
    before.top = rec->prov_top;
    before.initial = rec->prov_initial;
    for (int64_t j = 0; j < st.length; ++j) {
      const MemoryReads a = memory_reads(st, visited, st.first_token + j, 1000);
      const MemoryReads b = memory_reads(st, {}, st.first_token + j, 1000, &before);
      REQUIRE(b.holds_known);
      REQUIRE(a.top.size() == b.top.size());
      for (size_t i = 0; i < a.top.size(); ++i) {
        CHECK(a.top[i].entry == b.top[i].entry);
        REQUIRE(a.top[i].holds.size() == b.top[i].holds.size());
        for (size_t h = 0; h < a.top[i].holds.size(); ++h) {
          CHECK(a.top[i].holds[h].token == b.top[i].holds[h].token);
          CHECK(a.top[i].holds[h].weight == b.top[i].holds[h].weight);
        }
        CHECK(a.top[i].initial_share == b.top[i].initial_share);
      }
    }
    before.segment = 3;
    CHECK_FALSE(memory_reads(st, {}, st.first_token, 3, &before).holds_known);
    // The visited record wins over the chain's state when both are there.
    before.segment = 0;
    before.top[0].token = 99;
    CHECK(memory_reads(st, visited, st.first_token, 1000, &before).top.size() > 0);
    for (const auto& r : memory_reads(st, visited, st.first_token, 1000, &before).top)
      for (const auto& h : r.holds) CHECK(h.token != 99);
  }
}

}  // namespace

TEST_CASE("memory reads: a token's reads and what the entries held match the trace - memformer") { check_reads("memformer"); }
TEST_CASE("memory reads: a token a Memformer step predicts drew on the slots as memformer.decoder_read says") {
  // The next segment's tokens: their row of the decoder's draw on the slots (the trace's
  // memformer.decoder_read, whose formula tests/core/test_memformer.cpp checks against the
  // cross-attention and the memory read), and what those slots held before the step: the
  // same slots the step's own tokens read.
  const int64_t L = 16, m = 4;
  MemoryModel model = make_model(test::tiny_memformer(m, L), 11);
  Document doc = make_document(kReadsText, "ishmael.txt");
  Engine engine(model, doc, L, TraceSpec::all());
  engine.jump(0);
  SnapshotPtr snap = engine.jump(1);
  const StepData st = make_step_data(*snap, engine.document(), "memformer");
  REQUIRE(snap->trace.has(keys::kDecoderRead));
  const auto dr = snap->trace.at(keys::kDecoderRead)[0].to(torch::kFloat64);  // [L', k]
  REQUIRE(st.memformer.decoder_rows() == dr.size(0));
  REQUIRE(st.memformer.decoder_rows() == L);  // segment 2 of a 78-byte document is whole
  auto rec = std::make_shared<SegmentRecord>();
  rec->prov_top_k = 1;
  for (int e = 0; e < m; ++e) {
    rec->prov_top.push_back({3 + e, 0.9f});
    rec->prov_initial.push_back(0.1f);
  }
  VisitedSegments visited{{0, rec}};
  for (int64_t p = 0; p < st.memformer.decoder_rows(); ++p) {
    CAPTURE(p);
    const int64_t token = 2 * L + p;  // the document token that row p predicts
    const MemoryReads got = memory_reads(st, visited, token, 1000);
    REQUIRE_FALSE(got.empty());
    CHECK(got.predicted);
    CHECK(got.own_read);
    CHECK(got.entry_name == "slot");
    CHECK(got.memory_share == doctest::Approx(1.0).epsilon(1e-5));
    REQUIRE(got.top.size() == static_cast<size_t>(m));
    for (size_t i = 0; i < got.top.size(); ++i) {
      const MemoryRead& r = got.top[i];
      CHECK(r.weight == doctest::Approx(dr[p][r.entry].item<double>()).epsilon(1e-5));
      if (i > 0) CHECK(got.top[i - 1].weight >= r.weight);
      REQUIRE(r.holds.size() == 1);
      CHECK(r.holds[0].token == 3 + r.entry);  // the slots before step 1: segment 0's record
    }
  }
  // The step's own tokens still read through the encoder.
  CHECK_FALSE(memory_reads(st, visited, L + 2, 3).predicted);
  CHECK_FALSE(memory_reads(st, visited, L + 2, 3).empty());
  // A model whose step predicts the next token has no such rows.
  MemoryModel rmt = make_model(test::tiny_decoder("rmt", m, L), 11);
  Engine e2(rmt, doc, L, TraceSpec::all());
  const StepData sr = make_step_data(*e2.jump(1), e2.document(), "rmt");
  CHECK(sr.memformer.decoder_read.empty());
  CHECK(memory_reads(sr, {}, 2 * L + 1, 3).empty());
}
TEST_CASE("memory reads: a gated Memformer's chain carries its read layer's gate, tanh(read_gate), as traced") {
  const int64_t L = 16, m = 4;
  ModelConfig cfg = test::tiny_memformer(m, L);
  cfg.memory_gate = true;
  MemoryModel model = make_model(cfg, 11);
  {
    torch::NoGradGuard g;
    int l = 0;
    for (auto& kv : model->named_parameters())
      if (kv.key().find("read_gate") != std::string::npos) kv.value().fill_(0.25 * ++l);  // tanh(0.25), tanh(0.5)
  }
  Document doc = make_document(kReadsText, "ishmael.txt");
  Engine engine(model, doc, L, TraceSpec::all());
  engine.jump(0);
  SnapshotPtr snap = engine.jump(1);
  REQUIRE(snap->trace.has(keys::kReadGate));
  const StepData st = make_step_data(*snap, engine.document(), "memformer");
  REQUIRE(st.memformer.read_gate.size() == static_cast<size_t>(cfg.layers));
  for (int64_t l = 0; l < cfg.layers; ++l) CHECK(st.memformer.read_gate[l] == doctest::Approx(std::tanh(0.25 * (l + 1))));
  // A token of the segment and one the step predicts: both name the last read layer's gate.
  for (int64_t token : {L + 2, 2 * L + 3}) {
    CAPTURE(token);
    const MemoryReads r = memory_reads(st, {}, token, 3);
    REQUIRE_FALSE(r.empty());
    CHECK(r.layer == cfg.layers - 1);
    CHECK(r.gate == doctest::Approx(std::tanh(0.25 * cfg.layers)));
    CHECK(r.how.find("gate tanh(g) = ") != std::string::npos);
  }
  // An ungated model has no gate key, and its chain none.
  MemoryModel plain = make_model(test::tiny_memformer(m, L), 11);
  Engine e2(plain, doc, L, TraceSpec::all());
  e2.jump(0);
  SnapshotPtr s2 = e2.jump(1);
  CHECK_FALSE(s2->trace.has(keys::kReadGate));
  const MemoryReads r2 = memory_reads(make_step_data(*s2, e2.document(), "memformer"), {}, L + 2, 3);
  REQUIRE_FALSE(r2.empty());
  CHECK(std::isnan(r2.gate));
  CHECK(r2.how.find("gate") == std::string::npos);
}
TEST_CASE("memory reads: a token's reads and what the entries held match the trace - rmt") { check_reads("rmt"); }
TEST_CASE("memory reads: a token's reads and what the entries held match the trace - trxl") { check_reads("trxl"); }

TEST_CASE("memory reads: the first segment reads the initial memory - a model without memory reads none") {
  const int64_t L = 16;
  MemoryModel model = make_model(test::tiny_memformer(4, L), 3);
  Document doc = make_document(kReadsText, "ishmael.txt");
  Engine engine(model, doc, L, TraceSpec::all());
  const StepData st = make_step_data(*engine.jump(0), engine.document(), "memformer");
  const MemoryReads r = memory_reads(st, {}, 3, 2);
  REQUIRE(r.top.size() == 2);
  CHECK(r.holds_known);
  for (const auto& e : r.top) {
    CHECK(e.holds.empty());
    CHECK(e.initial_share == doctest::Approx(1.0));
  }
  MemoryModel plain = make_model(test::tiny_decoder("transformer", 4, L), 3);
  Engine e2(plain, doc, L, TraceSpec::all());
  CHECK(memory_reads(make_step_data(*e2.jump(1), e2.document(), "transformer"), {}, L + 2, 3).empty());
}
