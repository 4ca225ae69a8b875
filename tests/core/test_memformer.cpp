// Memformer (docs/models.md#memformer): writer, forgetting, decoder causality, traces.
#include "core/data/tokenizer.h"
#include "core/models/factory.h"
#include "core/models/memformer.h"
#include "core/trace/analysis.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace mnemo;

namespace {

SegmentInput random_input(int64_t len, int64_t seed, bool with_next = true) {
  auto g = torch::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  SegmentInput in;
  in.tokens = torch::randint(0, 256, {1, len}, g, torch::kInt64);
  in.valid = torch::ones({1, len}, torch::kBool);
  if (with_next) {
    in.next_tokens = torch::randint(0, 256, {1, len}, g, torch::kInt64);
    in.next_valid = torch::ones({1, len}, torch::kBool);
  }
  return in;
}

std::shared_ptr<MemformerImpl> tiny(uint64_t seed = 1, ModelConfig cfg = test::tiny_memformer()) {
  auto m = std::dynamic_pointer_cast<MemformerImpl>(make_model(cfg, seed));
  REQUIRE(m);
  return m;
}

torch::Tensor row_entropy(const torch::Tensor& p) { return -(p * p.clamp_min(1e-30).log()).sum(-1); }

}  // namespace

TEST_CASE("writer matches a hand computation (d=2, one head, identity projections)") {
  torch::NoGradGuard g;
  MemoryWriter w(2, 1, 0.5);
  for (auto* lin : {&w->q, &w->k, &w->v}) {
    auto dense = std::dynamic_pointer_cast<DenseProjectionImpl>(*lin);
    REQUIRE(dense);
    dense->weight.copy_(torch::eye(2));
    dense->bias.zero_();
  }
  auto mem = torch::tensor({1.f, 0.f}).view({1, 1, 2});
  auto x = torch::tensor({0.f, 1.f, 1.f, 1.f}).view({1, 2, 2});
  auto valid = torch::ones({1, 2}, torch::kBool);
  torch::Tensor attn;
  auto out = w->forward(mem, x, valid, &attn);
  // logits = [q.k_self, q.x1, q.x2] / sqrt(2) = [1, 0, 1]/sqrt(2); a = softmax(logits / 0.5)
  const double s = 1.0 / std::sqrt(2.0) / 0.5;
  const double z = 2 * std::exp(s) + 1.0;
  const double a0 = std::exp(s) / z, a1 = 1.0 / z, a2 = std::exp(s) / z;
  CHECK(attn.sizes() == torch::IntArrayRef({1, 1, 1, 3}));
  CHECK(attn[0][0][0][0].item<double>() == doctest::Approx(a0).epsilon(1e-6));
  CHECK(attn[0][0][0][1].item<double>() == doctest::Approx(a1).epsilon(1e-6));
  CHECK(attn[0][0][0][2].item<double>() == doctest::Approx(a2).epsilon(1e-6));
  // m' = a0 * m + a1 * x1 + a2 * x2 (the self value is the slot itself)
  CHECK(out[0][0][0].item<double>() == doctest::Approx(a0 * 1 + a1 * 0 + a2 * 1).epsilon(1e-6));
  CHECK(out[0][0][1].item<double>() == doctest::Approx(a0 * 0 + a1 * 1 + a2 * 1).epsilon(1e-6));
}

TEST_CASE("writer attention rows sum to 1 and have columns [self | tokens | cls] only") {
  auto m = tiny();
  torch::NoGradGuard g;
  Tracer tr(TraceSpec::all());
  auto in = random_input(8, 3);
  m->step(in, m->initial_memory(1), &tr);
  const auto& a = tr.trace().at(keys::kWriterAttn);
  // [B, H, k, 1 + L + n_cls]: no column for any other slot.
  CHECK(a.sizes() == torch::IntArrayRef({1, 2, 4, 1 + 8 + 1}));
  CHECK(test::max_abs_diff(a.sum(-1), torch::ones({1, 2, 4})) < 1e-5);
  CHECK(a.min().item<float>() >= 0.f);
}

TEST_CASE("a slot's writer output and attention do not depend on any other slot") {
  torch::NoGradGuard g;
  torch::manual_seed(5);
  MemoryWriter w(16, 2, 0.25);
  auto mem = torch::randn({1, 4, 16});
  auto x = torch::randn({1, 6, 16});
  auto valid = torch::ones({1, 6}, torch::kBool);
  torch::Tensor a1, a2;
  auto o1 = w->forward(mem, x, valid, &a1);
  auto mem2 = mem.clone();
  mem2[0][2] += torch::randn({16}) * 3.0;  // perturb slot 2 only
  auto o2 = w->forward(mem2, x, valid, &a2);
  for (int64_t i : {0, 1, 3}) {
    CHECK(test::max_abs_diff(o1[0][i], o2[0][i]) == 0.0);
    CHECK(test::max_abs_diff(a1.select(2, i), a2.select(2, i)) == 0.0);
  }
  CHECK(test::max_abs_diff(o1[0][2], o2[0][2]) > 1e-3);  // the perturbed slot itself did change
}

TEST_CASE("lowering the writer temperature lowers every row's entropy") {
  torch::NoGradGuard g;
  torch::manual_seed(9);
  MemoryWriter hot(16, 2, 1.0), cold(16, 2, 0.25);
  for (auto& item : cold->named_parameters()) item.value().copy_(hot->named_parameters()[item.key()]);
  auto mem = torch::randn({1, 5, 16});
  auto x = torch::randn({1, 7, 16});
  auto valid = torch::ones({1, 7}, torch::kBool);
  torch::Tensor ah, ac;
  hot->forward(mem, x, valid, &ah);
  cold->forward(mem, x, valid, &ac);
  auto eh = row_entropy(ah), ec = row_entropy(ac);
  CHECK((ec < eh).all().item<bool>());
}

TEST_CASE("a slot forced to attend only to itself is unchanged before forgetting") {
  torch::NoGradGuard g;
  torch::manual_seed(2);
  MemoryWriter w(16, 4, 0.25);
  auto mem = torch::randn({1, 3, 16});
  auto x = torch::randn({1, 5, 16});
  // No writable token: every slot's only choice is itself.
  auto none = torch::zeros({1, 5}, torch::kBool);
  torch::Tensor a;
  auto out = w->forward(mem, x, none, &a);
  CHECK(torch::equal(out, mem));
  CHECK(test::max_abs_diff(a.select(3, 0), torch::ones({1, 4, 3})) == 0.0);
  // And with tokens present but a self logit that dominates (huge q.k for the slot).
  auto big = mem * 1e3;
  for (auto* lin : {&w->q, &w->k}) {
    auto dense = std::dynamic_pointer_cast<DenseProjectionImpl>(*lin);
    REQUIRE(dense);
    dense->bias.zero_();
    dense->weight.copy_(torch::eye(16));
  }
  auto xs = torch::zeros({1, 5, 16});  // tokens give logit 0, the slot gives |m|^2/sqrt(dh) >> 0
  auto out2 = w->forward(big, xs, torch::ones({1, 5}, torch::kBool), &a);
  CHECK(test::max_abs_diff(out2, big) / big.abs().max().item<double>() < 1e-6);
}

TEST_CASE("biased memory normalisation: unit norm, m0 = v_bias/|v_bias|, forgetting off adds no bias") {
  torch::NoGradGuard g;
  auto m = tiny(4);
  auto m0 = m->initial_memory(2).at("slots");
  CHECK(m0.sizes() == torch::IntArrayRef({2, 4, 16}));
  auto vb = m->v_bias;
  for (int64_t i = 0; i < 4; ++i) {
    auto hand = vb[i] / std::sqrt((vb[i] * vb[i]).sum().item<double>());
    CHECK(test::max_abs_diff(m0[1][i], hand) < 1e-6);
  }
  Tracer tr(TraceSpec::all());
  auto out = m->step(random_input(8, 11), m->initial_memory(1), &tr);
  auto norms = out.memory.at("slots").norm(2, -1);
  CHECK(test::max_abs_diff(norms, torch::ones_like(norms)) < 1e-5);
  CHECK(test::max_abs_diff(tr.trace().at(keys::kForgetNorm), vb.norm(2, -1)) < 1e-6);

  auto mp = torch::randn({1, 4, 16});
  auto with = m->forget(mp);
  CHECK(test::max_abs_diff(with, (mp + vb) / (mp + vb).norm(2, -1, true)) < 1e-6);
  auto cfg = test::tiny_memformer();
  cfg.forgetting = false;
  auto off = tiny(4, cfg);
  CHECK(torch::equal(off->v_bias, m->v_bias));  // same seed, same weights
  auto without = off->forget(mp);
  CHECK(test::max_abs_diff(without, mp / mp.norm(2, -1, true)) < 1e-6);
  CHECK(test::max_abs_diff(without, with) > 1e-3);
}

TEST_CASE("decoder is causal: changing target token j leaves logits at positions <= j unchanged") {
  torch::NoGradGuard g;
  auto m = tiny(7);
  auto in = random_input(8, 21);
  auto mem = m->initial_memory(1);
  auto base = m->step(in, mem, nullptr).logits;
  for (int64_t j : {0, 3, 6}) {
    auto in2 = in;
    in2.next_tokens = in.next_tokens.clone();
    in2.next_tokens[0][j] = (in.next_tokens[0][j].item<int64_t>() + 17) % 256;
    auto l2 = m->step(in2, mem, nullptr).logits;
    CHECK(test::max_abs_diff(base.narrow(1, 0, j + 1), l2.narrow(1, 0, j + 1)) == 0.0);
    CHECK(test::max_abs_diff(base.narrow(1, j + 1, 1), l2.narrow(1, j + 1, 1)) > 1e-6);
  }
}

TEST_CASE("memory reading happens in every encoder layer and the memory changes the encoding") {
  torch::NoGradGuard g;
  auto m = tiny(3);
  Tracer tr(TraceSpec::of({"memformer.read_attn.*"}));
  auto in = random_input(8, 5);
  auto mem = m->initial_memory(1);
  auto o1 = m->step(in, mem, &tr);
  auto keys = tr.trace().keys_with_prefix(keys::kReadAttnPrefix);
  CHECK(keys == std::vector<std::string>{"memformer.read_attn.0", "memformer.read_attn.1"});
  CHECK(tr.trace().at("memformer.read_attn.0").sizes() == torch::IntArrayRef({1, 2, 8, 4}));
  CHECK_FALSE(tr.trace().has(keys::kWriterAttn));  // only what the spec asks for
  MemoryState other;
  other.tensors["slots"] = torch::nn::functional::normalize(torch::randn({1, 4, 16}),
                                                            torch::nn::functional::NormalizeFuncOptions().dim(-1));
  auto o2 = m->step(in, other, nullptr);
  CHECK(test::max_abs_diff(o1.logits, o2.logits) > 1e-6);
}

TEST_CASE("memory_scale sqrt_dim: the encoder and the writer see sqrt(d)-scaled slots - the state stays unit-norm") {
  // A sqrt_dim model stepping unit slots m equals the same weights under "unit" stepping
  // sqrt(d)·m: the scale applies exactly where the slots are read and written from.
  torch::NoGradGuard g;
  ModelConfig cs = test::tiny_memformer();
  cs.memory_scale = "sqrt_dim";
  auto a = tiny(4, cs);
  auto b = tiny(5);
  {
    auto pa = a->named_parameters(), pb = b->named_parameters();
    for (const auto& kv : pa) pb[kv.key()].copy_(kv.value());
  }
  auto in = random_input(8, 6);
  auto mem = a->initial_memory(1);
  MemoryState scaled;
  scaled.tensors["slots"] = mem.at("slots") * std::sqrt(16.0);
  Tracer ta(TraceSpec::of({keys::kWriterAttn})), tb(TraceSpec::of({keys::kWriterAttn}));
  auto oa = a->step(in, mem, &ta);
  auto ob = b->step(in, scaled, &tb);
  CHECK(test::max_abs_diff(oa.logits, ob.logits) < 1e-5);
  CHECK(test::max_abs_diff(oa.memory.at("slots"), ob.memory.at("slots")) < 1e-6);
  CHECK(test::max_abs_diff(ta.trace().at(keys::kWriterAttn), tb.trace().at(keys::kWriterAttn)) < 1e-6);
  CHECK(oa.memory.at("slots").norm(2, -1).sub(1).abs().max().item<float>() < 1e-5);  // BMN: unit norm
  // And it is not the unit model on the same input.
  auto ou = b->step(in, mem, nullptr);
  CHECK(test::max_abs_diff(oa.logits, ou.logits) > 1e-4);
  // The field: default "unit", round-trips, rejects other values by name.
  CHECK(ModelConfig{}.memory_scale == "unit");
  CHECK(ModelConfig::from_json(cs.to_json()).memory_scale == "sqrt_dim");
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"memory_scale", "big"}}),
                       doctest::Contains("'memory_scale' = 'big' must be \"unit\" or \"sqrt_dim\""), ConfigError);
}

TEST_CASE("memory_gate: a gated model at g = 0 is its \"w/o memory\" twin, and the gate's gradient is the finite difference") {
  ModelConfig cg = test::tiny_memformer();
  cg.memory_gate = true;
  ModelConfig cn = test::tiny_memformer();
  cn.memory = false;
  auto gated = tiny(4, cg);
  auto twin = tiny(5, cn);
  {
    torch::NoGradGuard g;
    auto pt = twin->named_parameters(), pg = gated->named_parameters();
    for (const auto& kv : pt) pg[kv.key()].copy_(kv.value());  // every twin tensor has its namesake
  }
  // One scalar per encoder layer, named for checkpoints, at 0.
  auto params = gated->named_parameters();
  for (int64_t l = 0; l < cg.layers; ++l) {
    const std::string name = "encoder." + std::to_string(l) + ".read_gate";
    REQUIRE(params.contains(name));
    CHECK(params[name].sizes() == torch::IntArrayRef({1}));
    CHECK(params[name].item<float>() == 0.f);
  }
  CHECK_FALSE(tiny(4)->named_parameters().contains("encoder.0.read_gate"));  // off by default
  auto in = random_input(8, 6);
  // Whatever the slots hold (here not the initial memory), at g = 0 the logits are the twin's
  // to the bit: the read is multiplied by tanh(0) = 0.
  MemoryState other;
  other.tensors["slots"] = torch::nn::functional::normalize(torch::randn({1, cg.slots, cg.dim}),
                                                            torch::nn::functional::NormalizeFuncOptions().dim(-1));
  {
    torch::NoGradGuard g;
    auto og = gated->step(in, other, nullptr);
    auto on = twin->step(in, twin->initial_memory(1), nullptr);
    CHECK(torch::equal(og.logits, on.logits));
    CHECK(og.loss.item<double>() == on.loss.item<double>());
    // The writer still writes: the gate only governs the read.
    CHECK(test::max_abs_diff(og.memory.at("slots"), other.at("slots")) > 1e-3);
  }
  // The gate's gradient at 0 is not 0 (the memory can come in), and equals the central
  // difference of the loss in double precision.
  gated->to(torch::kFloat64);
  other.tensors["slots"] = other.at("slots").to(torch::kFloat64);
  auto& g0 = params["encoder.0.read_gate"];
  for (auto& p : gated->parameters()) p.mutable_grad() = torch::Tensor();
  gated->step(in, other, nullptr).loss.backward();
  const double analytic = g0.grad().item<double>();
  CHECK(std::abs(analytic) > 1e-6);
  const double h = 1e-5;
  auto loss_at = [&](double v) {
    torch::NoGradGuard g;
    g0.fill_(v);
    return gated->step(in, other, nullptr).loss.item<double>();
  };
  const double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
  CHECK(analytic == doctest::Approx(numeric).epsilon(1e-6));
  // At g != 0 the memory changes the logits.
  {
    torch::NoGradGuard g;
    g0.fill_(0.5);
    auto a = gated->step(in, other, nullptr).logits;
    g0.fill_(0.0);
    auto b = gated->step(in, other, nullptr).logits;
    CHECK(test::max_abs_diff(a, b) > 1e-4);
  }
  // The field: default false, round-trips.
  CHECK_FALSE(ModelConfig{}.memory_gate);
  CHECK(ModelConfig::from_json(cg.to_json()).memory_gate);
}

TEST_CASE("padding is masked: pad tokens get no writer weight and no loss") {
  torch::NoGradGuard g;
  auto m = tiny(8);
  auto in = random_input(8, 2);
  in.valid.narrow(1, 5, 3).fill_(false);
  in.tokens.narrow(1, 5, 3).fill_(ByteTokenizer::kPad);
  in.next_valid.narrow(1, 2, 6).fill_(false);
  Tracer tr(TraceSpec::all());
  auto out = m->step(in, m->initial_memory(1), &tr);
  const auto& a = tr.trace().at(keys::kWriterAttn);
  CHECK(a.narrow(3, 1 + 5, 3).abs().max().item<float>() == 0.f);
  CHECK(out.token_loss.narrow(1, 2, 6).abs().max().item<float>() == 0.f);
  CHECK(out.loss.item<double>() == doctest::Approx(out.token_loss.narrow(1, 0, 2).mean().item<double>()));
  auto st = tr.trace().at(keys::kSlotType);
  CHECK((st.scalar_type() == torch::kInt8));
  CHECK(st.sizes() == torch::IntArrayRef({1, 4}));
}

TEST_CASE("slot types follow the thresholds on mean self-attention mass") {
  // writer_attn [1, 2 heads, 4 slots, 3 cols]; self masses (mean over heads) 0.95, 0.5, 0.05, 0.9
  auto a = torch::zeros({1, 2, 4, 3});
  const float self[2][4] = {{1.0f, 0.4f, 0.0f, 0.85f}, {0.9f, 0.6f, 0.1f, 0.95f}};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      a[0][h][i][0] = self[h][i];
      a[0][h][i][1] = 1.0f - self[h][i];
    }
  auto t = classify_slots(a, SlotThresholds{});
  CHECK(t[0][0].item<int8_t>() == 0);  // retain
  CHECK(t[0][1].item<int8_t>() == 1);  // mix
  CHECK(t[0][2].item<int8_t>() == 2);  // overwrite
  CHECK(t[0][3].item<int8_t>() == 0);  // exactly 0.9 counts as retain
  auto t2 = classify_slots(a, SlotThresholds{0.99f, 0.5f});
  CHECK(t2[0][1].item<int8_t>() == 2);
  CHECK(t2[0][3].item<int8_t>() == 1);
  auto c = count_slot_types(t);
  CHECK(c.retain == 2);
  CHECK(c.mix == 1);
  CHECK(c.overwrite == 1);
  CHECK_THROWS_WITH_AS(classify_slots(a, SlotThresholds{0.2f, 0.5f}), doctest::Contains("must not exceed"),
                       ConfigError);
}

TEST_CASE("model config validation names the field and range") {
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"slots", 0}}), doctest::Contains("'slots' = 0 is out of range 1..65536"), ConfigError);
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"temperature", 0.0}}), doctest::Contains("'temperature'"), ConfigError);
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"dim", 10}, {"heads", 4}}), doctest::Contains("divisible"), ConfigError);
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"slotz", 3}}), doctest::Contains("'slotz' is unknown"), ConfigError);
  CHECK_THROWS_WITH_AS(ModelConfig::from_json(nlohmann::json{{"slots", "many"}}), doctest::Contains("must be an integer"), ConfigError);
  auto c = ModelConfig::from_json(test::tiny_memformer().to_json());
  CHECK(c.to_json() == test::tiny_memformer().to_json());
}

TEST_CASE("weights round trip by module path - a mismatched checkpoint is rejected by name") {
  auto a = tiny(1), b = tiny(2);
  auto wa = named_weights(*a);
  bool has_path = false;
  for (auto& [k, t] : wa) has_path = has_path || k == "encoder.0.self_attn.q.weight";
  CHECK(has_path);
  load_weights(*b, wa, "test");
  for (auto& [k, t] : named_weights(*b)) {
    for (auto& [k2, t2] : wa)
      if (k == k2) CHECK(torch::equal(t, t2));
  }
  auto bigger = test::tiny_memformer(6);
  auto c = tiny(1, bigger);
  CHECK_THROWS_WITH_AS(load_weights(*c, wa, "ckpt"), doctest::Contains("'v_bias' has shape"), ConfigError);
}

TEST_CASE("memformer.decoder_read: each predicted token's draw on the slots, the decoder's cross-attention times the encoder's read") {
  // The app's chain for a token a Memformer step predicts (docs/formats.md, app/figures/memory_reads.h):
  // mean over heads of the last decoder layer's cross-attention over [tokens | cls], times the
  // mean over heads of the last encoder layer's memory read of those rows. Without cls tokens
  // every factor is traced, so the product is recomputed here in float64.
  torch::NoGradGuard g;
  for (int64_t n_cls : {0, 2}) {
    CAPTURE(n_cls);
    ModelConfig cfg = test::tiny_memformer(5, 8);
    cfg.n_cls = n_cls;
    cfg.dec_layers = 2;
    auto m = tiny(7, cfg);
    Tracer tr(TraceSpec::of({"memformer.read_attn.*", "memformer.cross_attn.*", keys::kDecoderRead}));
    auto in = random_input(8, 9);
    in.next_tokens = in.next_tokens.narrow(1, 0, 6);  // a shorter predicted segment: L' = 6
    in.next_valid = in.next_valid.narrow(1, 0, 6);
    in.valid[0][7].fill_(false);                      // a padded encoder token
    m->step(in, m->initial_memory(1), &tr);
    const Trace& t = tr.trace();
    REQUIRE(t.has("memformer.cross_attn.0"));
    REQUIRE(t.has("memformer.cross_attn.1"));
    const auto cross = t.at("memformer.cross_attn.1").to(torch::kFloat64);  // [1, H, 6, 8 + C]
    CHECK(cross.sizes() == torch::IntArrayRef({1, 2, 6, 8 + n_cls}));
    CHECK((cross.sum(-1) - 1).abs().max().item<double>() < 1e-6);  // rows are distributions
    CHECK(cross.select(3, 7).abs().max().item<double>() == 0.0);    // nothing on the padded token
    REQUIRE(t.has(keys::kDecoderRead));
    const auto dr = t.at(keys::kDecoderRead).to(torch::kFloat64);  // [1, 6, 5]
    CHECK(dr.sizes() == torch::IntArrayRef({1, 6, 5}));
    CHECK((dr.sum(-1) - 1).abs().max().item<double>() < 1e-6);      // each row sums to 1 over the slots
    const auto read = t.at("memformer.read_attn.1").to(torch::kFloat64).mean(1);  // token rows [1, 8, 5]
    const auto via_tokens = torch::bmm(cross.mean(1).narrow(2, 0, 8), read);     // [1, 6, 5]
    if (n_cls == 0) {
      CHECK((dr - via_tokens).abs().max().item<double>() < 1e-6);
    } else {
      // The cls rows' reads are not traced: what they add is non-negative and carries exactly
      // the cross-attention's mass on the cls columns.
      CHECK((dr - via_tokens).min().item<double>() > -1e-7);
      const auto cls_mass = cross.mean(1).narrow(2, 8, n_cls).sum(-1);  // [1, 6]
      CHECK(((dr - via_tokens).sum(-1) - cls_mass).abs().max().item<double>() < 1e-6);
    }
  }
  // Not asked for, not computed; no memory ("w/o memory"): nothing to draw on.
  Tracer none(TraceSpec::of({"memformer.cross_attn.*"}));
  auto m = tiny(7);
  m->step(random_input(8, 9), m->initial_memory(1), &none);
  CHECK_FALSE(none.trace().has(keys::kDecoderRead));
  ModelConfig off = test::tiny_memformer();
  off.memory = false;
  auto mo = tiny(7, off);
  Tracer all(TraceSpec::all());
  mo->step(random_input(8, 9), mo->initial_memory(1), &all);
  CHECK_FALSE(all.trace().has(keys::kDecoderRead));
  CHECK(all.trace().has("memformer.cross_attn.0"));
}
