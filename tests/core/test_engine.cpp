// core/engine: stepping forward/back, jumps, determinism, NaN reporting.
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/models/memformer.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

using namespace mnemo;

namespace {
Document text_doc(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (i * 7) % 26));
  return make_document(s, "synthetic");
}

bool traces_equal(const Trace& a, const Trace& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [k, t] : a.tensors) {
    if (!b.has(k) || !torch::equal(t, b.at(k))) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("step back returns the kept, bit-identical memory state without recomputing") {
  auto cfg = test::tiny_memformer();
  Engine e(make_model(cfg, 3), text_doc(60), cfg.segment_len, TraceSpec::all());
  REQUIRE(e.num_segments() == 8);
  std::vector<MemoryState> seen;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(e.step_forward());
    seen.push_back(e.memory_before(i + 1).detached_clone());
  }
  CHECK(e.position() == 3);
  const int64_t computed = e.steps_computed();
  auto back = e.step_back();
  REQUIRE(back);
  CHECK(back->segment == 2);
  CHECK(e.steps_computed() == computed);  // a lookup, no recompute
  for (int i = 0; i < 4; ++i) CHECK(e.memory_before(i + 1).bit_equal(seen[static_cast<size_t>(i)]));
  CHECK_FALSE(e.memory_before(1).bit_equal(e.memory_before(2)));
  e.step_back();
  e.step_back();
  CHECK(e.position() == 0);
  CHECK(e.step_back() == nullptr);  // before the start: no such segment, position unchanged
  CHECK(e.position() == 0);
}

TEST_CASE("jump(n) equals n sequential steps, and recomputes only from the nearest kept state") {
  auto cfg = test::tiny_memformer();
  auto model = make_model(cfg, 4);
  Engine seq(model, text_doc(70), cfg.segment_len, TraceSpec::all());
  for (int i = 0; i <= 6; ++i) seq.step_forward();
  Engine jmp(model, text_doc(70), cfg.segment_len, TraceSpec::all());
  auto s = jmp.jump(6);
  REQUIRE(s);
  CHECK(s->segment == 6);
  CHECK(jmp.steps_computed() == 7);
  CHECK(jmp.memory_before(7).bit_equal(seq.memory_before(7)));
  CHECK(traces_equal(s->trace, seq.jump(6)->trace));
  // Going back then forward past the end of what is kept computes only the new segments.
  jmp.jump(2);
  const int64_t before = jmp.steps_computed();
  jmp.jump(8);
  CHECK(jmp.steps_computed() - before == 2);  // segment 7 (untraced) and 8 (traced)
  CHECK_THROWS_AS(jmp.jump(9), std::out_of_range);
  CHECK(jmp.step_forward() == nullptr);
  jmp.reset();
  CHECK(jmp.position() == -1);
  CHECK(jmp.kept_states() == 1);
}

TEST_CASE("an engine over a shared document reads its owner's bytes (no copy) and steps as over a copy") {
  auto cfg = test::tiny_memformer();
  auto model = make_model(cfg, 4);
  auto doc = std::make_shared<const Document>(text_doc(70));
  Engine shared(model, doc, cfg.segment_len, TraceSpec::all());
  CHECK(&shared.document() == doc.get());
  CHECK(doc.use_count() == 2);
  Engine copied(model, text_doc(70), cfg.segment_len, TraceSpec::all());
  CHECK(&copied.document() != doc.get());
  CHECK(traces_equal(shared.jump(5)->trace, copied.jump(5)->trace));
  CHECK_THROWS_AS(Engine(model, std::shared_ptr<const Document>(), cfg.segment_len, TraceSpec::all()), DocumentError);
}

TEST_CASE("same seed, same traces - another seed, other traces") {
  auto cfg = test::tiny_memformer();
  auto run = [&](uint64_t seed) {
    Engine e(make_model(cfg, seed), text_doc(40), cfg.segment_len, TraceSpec::all());
    e.step_forward();
    return e.step_forward()->trace;
  };
  auto a = run(11), b = run(11), c = run(12);
  CHECK(traces_equal(a, b));
  CHECK_FALSE(traces_equal(a, c));
  CHECK(a.has("input.tokens"));
  CHECK(a.has("input.offsets"));
  CHECK(a.has("lm.loss"));
  CHECK(a.has("memformer.memory_prev"));
  CHECK(a.has("memformer.memory"));
  CHECK(a.has("memformer.forget_norm"));
  CHECK(a.has("memformer.slot_type"));
  CHECK(a.at("input.offsets").sizes() == torch::IntArrayRef({1, 8, 2}));
  CHECK(a.at("input.offsets")[0][0][0].item<int64_t>() == 8);  // segment 1 starts at byte 8
}

TEST_CASE("the memory after a step is the memory before the next - memory_prev is traced") {
  auto cfg = test::tiny_memformer();
  Engine e(make_model(cfg, 5), text_doc(30), cfg.segment_len, TraceSpec::all());
  auto s0 = e.step_forward();
  auto s1 = e.step_forward();
  CHECK(torch::equal(s0->trace.at("memformer.memory"), s1->trace.at("memformer.memory_prev")));
  CHECK(torch::equal(s1->trace.at("memformer.memory_prev"), e.memory_before(1).at("slots")));
  // The last segment predicts nothing: no loss.
  auto last = e.jump(e.num_segments() - 1);
  CHECK(std::isnan(last->loss));
  CHECK_FALSE(last->trace.has("lm.loss"));
}

TEST_CASE("NaN in the model is reported with the key, not dropped") {
  auto cfg = test::tiny_memformer();
  auto model = make_model(cfg, 6);
  {
    torch::NoGradGuard g;
    auto m = std::dynamic_pointer_cast<MemformerImpl>(model);
    m->head->weight[3][0] = std::nanf("");
  }
  Engine e(model, text_doc(30), cfg.segment_len, TraceSpec::all());
  auto s = e.step_forward();
  CHECK(s->non_finite);
  CHECK(s->non_finite_key == "lm.loss");
}
