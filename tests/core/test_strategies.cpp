// core/train/rollout strategies: gradient checkpointing and MRBP (Algorithm 1) give the
// gradients of full BPTT; core/train/memory_stats; the Memformer "w/o memory" ablation.
#include "core/models/factory.h"
#include "core/models/memformer.h"
#include "core/train/memory_stats.h"
#include "core/train/rollout.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace mnemo;

namespace {

using Grads = std::vector<std::pair<std::string, torch::Tensor>>;

// T segments of L tokens for a batch of B, every target valid except the second half of the
// last segment's (so the token weighting of J matters).
std::vector<SegmentInput> make_segments(int64_t t_count, int64_t b, int64_t len, uint64_t seed) {
  std::vector<SegmentInput> segs;
  auto g = torch::make_generator<at::CPUGeneratorImpl>(seed);
  for (int64_t t = 0; t < t_count; ++t) {
    SegmentInput in;
    in.tokens = torch::randint(0, 256, {b, len}, g, torch::kInt64);
    in.valid = torch::ones({b, len}, torch::kBool);
    in.next_tokens = torch::randint(0, 256, {b, len}, g, torch::kInt64);
    in.next_valid = torch::ones({b, len}, torch::kBool);
    if (t == t_count - 1) in.next_valid.narrow(1, len / 2, len - len / 2).fill_(false);
    segs.push_back(in);
  }
  return segs;
}

Grads grads_of(torch::nn::Module& m) {
  Grads g;
  for (const auto& item : m.named_parameters()) {
    const auto& p = item.value();
    g.emplace_back(item.key(), p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return g;
}

struct StrategyRun {
  Grads grads;
  RolloutResult result;
};

StrategyRun run(MemoryModelImpl& m, const std::vector<SegmentInput>& segs, Strategy s, bool memory_grad, int64_t batch) {
  m.zero_grad();
  MemoryState mem = m.initial_memory(batch);
  if (!memory_grad) mem = detach_memory(mem);
  StrategyRun r;
  r.result = run_rollout(m, segs, mem, RolloutOptions{s, -1, true});
  r.grads = grads_of(m);
  return r;
}

// max |a - b| / max |a| over one tensor (0 when both are 0). `floor` bounds the denominator
// from below: some gradients are zero in exact arithmetic (e.g. every attention key bias:
// softmax ignores a constant added to a row of logits) and hold only rounding noise.
double rel_diff(const torch::Tensor& ref, const torch::Tensor& got, double floor = 0.0) {
  const double scale = ref.abs().max().item<double>();
  const double diff = (ref.to(torch::kFloat64) - got.to(torch::kFloat64)).abs().max().item<double>();
  return diff == 0.0 ? 0.0 : diff / std::max({scale, floor, 1e-300});
}

// Checks every parameter's gradient: max |got - ref| / max |ref| <= tol, with max |ref|
// taken as at least 1e-3 of the largest gradient of the model. Returns the worst value.
double check_same_grads(const Grads& ref, const Grads& got, double tol, const char* what) {
  REQUIRE(ref.size() == got.size());
  double largest = 0;
  for (const auto& [n, g] : ref) largest = std::max(largest, g.abs().max().item<double>());
  REQUIRE(largest > 0);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    CHECK(ref[i].first == got[i].first);
    const double d = rel_diff(ref[i].second, got[i].second, 1e-3 * largest);
    worst = std::max(worst, d);
    if (d > tol) FAIL_CHECK(what << ": gradient of " << ref[i].first << " differs by " << d << " (relative), tolerance " << tol);
  }
  return worst;
}

std::shared_ptr<MemformerImpl> small_memformer(uint64_t seed) {
  auto cfg = test::tiny_memformer(4, 8);
  auto m = std::dynamic_pointer_cast<MemformerImpl>(make_model(cfg, seed));
  m->train();
  return m;
}

// A generic recurrent model: memory {"h": [B, d] float, "n": [B] int64 step counter}, with
// dropout on the memory path, and a loss on the next segment from the new h.
struct ToyRecurrentImpl : MemoryModelImpl {
  explicit ToyRecurrentImpl(int64_t d) : d_(d) {
    emb = register_module("emb", torch::nn::Embedding(262, d));
    w = register_module("w", torch::nn::Linear(d, d));
    u = register_module("u", torch::nn::Linear(d, d));
    head = register_module("head", torch::nn::Linear(d, 262));
    h0 = register_parameter("h0", torch::randn({d}));
  }
  std::string kind() const override { return "toy"; }
  MemoryState initial_memory(int64_t b) override {
    MemoryState s;
    s.tensors["h"] = torch::tanh(h0).unsqueeze(0).expand({b, d_}).contiguous();
    s.tensors["n"] = torch::zeros({b}, torch::kInt64);
    return s;
  }
  SegmentOutput step(const SegmentInput& in, const MemoryState& mem, Tracer*) override {
    auto x = emb->forward(in.tokens).mean(1);
    auto h = torch::dropout(torch::tanh(w->forward(mem.at("h")) + u->forward(x)), 0.3, is_training());
    SegmentOutput out;
    out.memory.tensors["h"] = h;
    out.memory.tensors["n"] = mem.at("n") + 1;
    if (in.next_tokens.defined()) {
      const int64_t b = in.next_tokens.size(0), l = in.next_tokens.size(1);
      auto logits = head->forward(h).unsqueeze(1).expand({b, l, 262});
      auto ce = torch::nn::functional::cross_entropy(
          logits.reshape({-1, 262}), in.next_tokens.reshape({-1}),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
      auto mask = in.next_valid.to(ce.scalar_type()).reshape({-1});
      out.loss_sum = (ce * mask).sum();
      out.loss_count = mask.sum();
    }
    return out;
  }
  int64_t d_;
  torch::nn::Embedding emb{nullptr};
  torch::nn::Linear w{nullptr}, u{nullptr}, head{nullptr};
  torch::Tensor h0;
};

}  // namespace

TEST_CASE("strategies: parse_strategy knows bptt, checkpoint and mrbp and names the field otherwise") {
  CHECK(parse_strategy("bptt") == Strategy::kBptt);
  CHECK(parse_strategy("checkpoint") == Strategy::kCheckpoint);
  CHECK(parse_strategy("mrbp") == Strategy::kMrbp);
  for (auto s : {Strategy::kBptt, Strategy::kCheckpoint, Strategy::kMrbp}) CHECK(parse_strategy(strategy_name(s)) == s);
  try {
    parse_strategy("MRBP");
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    CHECK(w.find("'strategy'") != std::string::npos);
    CHECK(w.find("mrbp") != std::string::npos);
  }
}

TEST_CASE("strategies: checkpointing and MRBP give full-BPTT gradients (float32)") {
  auto model = small_memformer(11);
  auto segs = make_segments(4, 2, 8, 5);
  for (bool memory_grad : {false, true}) {
    CAPTURE(memory_grad);
    StrategyRun ref = run(*model, segs, Strategy::kBptt, memory_grad, 2);
    for (auto s : {Strategy::kCheckpoint, Strategy::kMrbp}) {
      const std::string sname = strategy_name(s);
      CAPTURE(sname);
      StrategyRun got = run(*model, segs, s, memory_grad, 2);
      const double worst = check_same_grads(ref.grads, got.grads, 1e-4, strategy_name(s));
      CHECK(worst < 1e-4);
      const std::string note = memory_grad ? " (memory_in requires grad)" : "";
      MESSAGE(sname << note << ": worst relative difference " << worst);
      CHECK(got.result.loss == doctest::Approx(ref.result.loss).epsilon(1e-6));
      CHECK(got.result.loss_count == ref.result.loss_count);
      REQUIRE(got.result.segment_loss_sum.size() == 4);
      for (size_t t = 0; t < 4; ++t) {
        CHECK(got.result.segment_loss_sum[t] == doctest::Approx(ref.result.segment_loss_sum[t]).epsilon(1e-6));
        CHECK(got.result.segment_loss_count[t] == ref.result.segment_loss_count[t]);
      }
      CHECK(test::max_abs_diff(got.result.final_memory.at("slots"), ref.result.final_memory.at("slots")) < 1e-6);
      CHECK_FALSE(got.result.final_memory.at("slots").requires_grad());
    }
  }
}

TEST_CASE("strategies: checkpointing and MRBP give full-BPTT gradients (float64, 1e-10)") {
  auto model = small_memformer(12);
  model->to(torch::kFloat64);
  auto segs = make_segments(4, 2, 8, 6);
  for (bool memory_grad : {false, true}) {
    CAPTURE(memory_grad);
    StrategyRun ref = run(*model, segs, Strategy::kBptt, memory_grad, 2);
    for (auto s : {Strategy::kCheckpoint, Strategy::kMrbp}) {
      const std::string sname = strategy_name(s);
      CAPTURE(sname);
      StrategyRun got = run(*model, segs, s, memory_grad, 2);
      check_same_grads(ref.grads, got.grads, 1e-10, strategy_name(s));
      CHECK(got.result.loss == doctest::Approx(ref.result.loss).epsilon(1e-12));
    }
  }
}

TEST_CASE("strategies: a learned initial memory gets its gradient (v_bias through m_0)") {
  // v_bias reaches the loss both through forgetting and through m_0; the m_0 path exists
  // only when memory_in requires grad. The difference of the two gradients is that path.
  auto model = small_memformer(13);
  auto segs = make_segments(3, 1, 8, 7);
  auto vb = [&](const StrategyRun& r) {
    for (const auto& [n, g] : r.grads)
      if (n == "v_bias") return g;
    return torch::Tensor();
  };
  const auto with = vb(run(*model, segs, Strategy::kBptt, true, 1));
  const auto without = vb(run(*model, segs, Strategy::kBptt, false, 1));
  const auto m0_path = with - without;
  REQUIRE(m0_path.abs().max().item<double>() > 0);
  for (auto s : {Strategy::kCheckpoint, Strategy::kMrbp}) {
    const std::string sname = strategy_name(s);
    CAPTURE(sname);
    const auto got = vb(run(*model, segs, s, true, 1)) - vb(run(*model, segs, s, false, 1));
    CHECK(rel_diff(m0_path, got) < 1e-3);
  }
}

TEST_CASE("strategies: memory kept across rollouts and gradients accumulated over them") {
  // Two rollouts of 3 segments; the second starts from the first's final memory. Gradients
  // of both accumulate (no zero_grad in between): MRBP must keep what was already in .grad.
  auto model = small_memformer(14);
  auto segs = make_segments(6, 2, 8, 8);
  std::vector<SegmentInput> a(segs.begin(), segs.begin() + 3), b(segs.begin() + 3, segs.end());
  auto two = [&](Strategy s1, Strategy s2) {
    model->zero_grad();
    auto r1 = run_rollout(*model, a, model->initial_memory(2), RolloutOptions{s1, -1, true});
    auto r2 = run_rollout(*model, b, r1.final_memory, RolloutOptions{s2, -1, true});
    return std::make_pair(grads_of(*model), r2.final_memory);
  };
  auto ref = two(Strategy::kBptt, Strategy::kBptt);
  for (auto [s1, s2] : {std::pair{Strategy::kMrbp, Strategy::kMrbp}, std::pair{Strategy::kBptt, Strategy::kMrbp},
                        std::pair{Strategy::kCheckpoint, Strategy::kCheckpoint}, std::pair{Strategy::kMrbp, Strategy::kCheckpoint}}) {
    const std::string n1 = strategy_name(s1), n2 = strategy_name(s2);
    CAPTURE(n1);
    CAPTURE(n2);
    auto got = two(s1, s2);
    check_same_grads(ref.first, got.first, 1e-4, "two rollouts");
    CHECK(test::max_abs_diff(ref.second.at("slots"), got.second.at("slots")) < 1e-6);
  }
}

TEST_CASE("strategies: any memory model — a non-float state is carried, dropout masks are replayed") {
  torch::manual_seed(3);
  auto model = std::make_shared<ToyRecurrentImpl>(12);
  model->train();
  auto segs = make_segments(5, 3, 4, 9);
  auto go = [&](Strategy s, bool memory_grad) {
    torch::manual_seed(1234);  // same dropout stream for every strategy
    return run(*model, segs, s, memory_grad, 3);
  };
  for (bool memory_grad : {false, true}) {
    CAPTURE(memory_grad);
    StrategyRun ref = go(Strategy::kBptt, memory_grad);
    CHECK(ref.result.final_memory.at("n").eq(5).all().item<bool>());
    for (auto s : {Strategy::kCheckpoint, Strategy::kMrbp}) {
      const std::string sname = strategy_name(s);
      CAPTURE(sname);
      StrategyRun got = go(s, memory_grad);
      check_same_grads(ref.grads, got.grads, 1e-5, strategy_name(s));
      CHECK(got.result.loss == doctest::Approx(ref.result.loss).epsilon(1e-6));
      CHECK(got.result.final_memory.at("n").eq(5).all().item<bool>());
      CHECK((got.result.final_memory.at("n").scalar_type() == torch::kInt64));
    }
  }
  // Without the replay the masks would differ: a second BPTT run under another seed differs.
  torch::manual_seed(99);
  StrategyRun other = run(*model, segs, Strategy::kBptt, false, 3);
  torch::manual_seed(1234);
  StrategyRun same = run(*model, segs, Strategy::kBptt, false, 3);
  for (size_t i = 0; i < same.grads.size(); ++i)
    if (same.grads[i].first == "w.weight") CHECK(rel_diff(same.grads[i].second, other.grads[i].second) > 1e-3);
}

TEST_CASE("strategies: checkpoint and mrbp back-propagate through the whole rollout only") {
  auto model = small_memformer(15);
  auto segs = make_segments(4, 1, 8, 10);
  auto mem = detach_memory(model->initial_memory(1));
  for (auto s : {Strategy::kCheckpoint, Strategy::kMrbp}) {
    CHECK_THROWS_AS(run_rollout(*model, segs, mem, RolloutOptions{s, 1, true}), std::invalid_argument);
    CHECK_NOTHROW(run_rollout(*model, segs, mem, RolloutOptions{s, 3, true}));  // k >= T-1 is full
    CHECK_NOTHROW(run_rollout(*model, segs, mem, RolloutOptions{s, 1, false}));  // forward only ignores it
  }
}

TEST_CASE("strategies: the callback sees every segment once, with the loss of that segment") {
  auto model = small_memformer(16);
  auto segs = make_segments(4, 2, 8, 11);
  for (auto s : {Strategy::kBptt, Strategy::kCheckpoint, Strategy::kMrbp}) {
    const std::string sname = strategy_name(s);
    CAPTURE(sname);
    std::vector<int64_t> seen;
    std::vector<double> losses(4, 0.0);
    model->zero_grad();
    auto r = run_rollout(*model, segs, detach_memory(model->initial_memory(2)), RolloutOptions{s, -1, true},
                         [&](int64_t t, const SegmentInput&, const SegmentOutput& out) {
                           seen.push_back(t);
                           losses[static_cast<size_t>(t)] = out.loss_sum.item<double>();
                         });
    std::sort(seen.begin(), seen.end());
    CHECK(seen == std::vector<int64_t>{0, 1, 2, 3});
    for (size_t t = 0; t < 4; ++t) CHECK(losses[t] == doctest::Approx(r.segment_loss_sum[t]).epsilon(1e-6));
  }
}

TEST_CASE("Memformer w/o memory: nothing is read or written, the state passes through") {
  auto cfg = test::tiny_memformer(4, 8);
  cfg.memory = false;
  auto json = cfg.to_json();
  CHECK(json["memory"] == false);
  CHECK(ModelConfig::from_json(json).memory == false);
  CHECK(ModelConfig::from_json(test::tiny_memformer().to_json()).memory == true);
  CHECK_THROWS_AS(ModelConfig::from_json(nlohmann::json{{"memory", 0}}), ConfigError);
  auto model = std::dynamic_pointer_cast<MemformerImpl>(make_model(cfg, 3));
  for (const auto& item : model->named_parameters()) {
    CHECK(item.key().find("mem_read") == std::string::npos);
    CHECK(item.key().find("writer") == std::string::npos);
  }
  auto segs = make_segments(2, 1, 8, 12);
  torch::NoGradGuard g;
  auto m0 = model->initial_memory(1);
  MemoryState other;
  other.tensors["slots"] = torch::randn_like(m0.at("slots"));
  auto a = model->step(segs[0], m0, nullptr);
  auto b = model->step(segs[0], other, nullptr);
  CHECK(test::max_abs_diff(a.logits, b.logits) == 0.0);
  CHECK(a.memory.bit_equal(m0));
  Tracer tracer(TraceSpec::all());
  model->step(segs[0], m0, &tracer);
  CHECK_FALSE(tracer.trace().has(keys::kWriterAttn));
  CHECK(tracer.trace().keys_with_prefix(keys::kReadAttnPrefix).empty());
  CHECK(tracer.trace().has(keys::kLmLoss));
}

TEST_CASE("memory stats: the host peak covers an allocation made after begin()") {
  PeakMemoryMeter meter;
  meter.begin();
  const StepMemory before = meter.end();
  CHECK(before.host_baseline_bytes > 0);
  CHECK(before.host_peak_bytes >= before.host_baseline_bytes);
  CHECK(before.device_peak_bytes == -1);
  meter.begin();
  {
    auto big = torch::ones({64, 1024, 1024}, torch::kFloat32);  // 256 MiB, every page touched
    CHECK(big.sum().item<double>() == doctest::Approx(64.0 * 1024 * 1024));
  }
  const StepMemory m = meter.end();
  CHECK(m.host_peak_bytes >= m.host_baseline_bytes + (200ll << 20));
  if (m.host_peak_since_begin) {
    // A second, empty span no longer sees that allocation's peak.
    meter.begin();
    const StepMemory e = meter.end();
    CHECK(e.host_step_bytes() < (100ll << 20));
  } else {
    MESSAGE("this kernel cannot reset the resident-memory peak (/proc/self/clear_refs); per-step peaks are lifetime peaks");
  }
  CHECK(host_memory().rss_bytes > 0);
  CHECK(cuda_memory(0).available == torch::cuda::is_available());
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(3 * 1024 * 1024 / 2) == "1.5 MiB");
  CHECK(format_bytes(-1) == "n/a");
}

TEST_CASE("sessions/memformer-*.json: the paper's MNIST setting, its ablations and the Moby Dick LM") {
  const std::string dir = std::string(MNEMO_SOURCE_DIR) + "/sessions/";
  auto read = [&](const std::string& name) {
    std::ifstream in(dir + name);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  };
  const ModelConfig base = ModelConfig::load(dir + "memformer-mnist.json");
  CHECK(base.layers == 4);
  CHECK(base.dec_layers == 8);
  CHECK(base.dim == 128);
  CHECK(base.heads == 4);
  CHECK(base.slots == 8);
  CHECK(base.temperature == 0.25);
  CHECK(base.forgetting);
  CHECK(base.memory);
  struct Ablation {
    const char* file;
    std::function<bool(const ModelConfig&)> differs;
  };
  const std::vector<Ablation> ablations = {
      {"memformer-mnist.json", [](const ModelConfig&) { return true; }},
      {"memformer-mnist-no-memory.json", [](const ModelConfig& c) { return !c.memory; }},
      {"memformer-mnist-no-forgetting.json", [](const ModelConfig& c) { return !c.forgetting; }},
      {"memformer-mnist-tau1.json", [](const ModelConfig& c) { return c.temperature == 1.0; }},
      {"memformer-mnist-one-head.json", [](const ModelConfig& c) { return c.heads == 1; }},
  };
  for (const auto& a : ablations) {
    CAPTURE(a.file);
    const ModelConfig c = ModelConfig::load(dir + a.file);
    CHECK(a.differs(c));
    auto j = read(a.file);
    // Time horizon 8: 8 segments of 98 pixels per 784-pixel image.
    CHECK(j["task"]["name"] == "mnist");
    CHECK(j["task"]["segments"].get<int64_t>() * c.segment_len == 784);
    CHECK(parse_strategy(j["train"]["strategy"].get<std::string>()) == Strategy::kMrbp);
    CHECK(j["train"]["bptt_depth"] == -1);
    // Everything else as in the base config.
    auto jm = c.to_json(), jb = base.to_json();
    int differing = 0;
    for (auto it = jb.begin(); it != jb.end(); ++it) differing += jm[it.key()] != it.value();
    CHECK(differing <= 1);
  }
  const ModelConfig lm = ModelConfig::load(dir + "memformer-moby-dick.json");
  CHECK(lm.model == "memformer");
  auto j = read("memformer-moby-dick.json");
  CHECK(j["task"]["name"] == "moby-dick");
  CHECK(parse_strategy(j["train"]["strategy"].get<std::string>()) == Strategy::kMrbp);
}

TEST_CASE("bench training-strategies: one child process per strategy, equal gradients, exit 2 on bad flags") {
  auto sh = [](const std::string& args, int* code) {
    const auto r = test::run_cli("bench training-strategies " + args);
    *code = r.code;
    return r.output;
  };
  const std::string dir = test::temp_dir("bench-strategies");
  const std::string cfg = dir + "/tiny.json";
  {
    std::ofstream f(cfg);
    f << nlohmann::json{{"model", test::tiny_memformer(4, 8).to_json()}}.dump();
  }
  int code = -1;
  const std::string out = sh("--config " + cfg + " --batch 1 --horizon 3 --rollouts 1 --rounds 1 --threads 1", &code);
  CAPTURE(out);
  REQUIRE(code == 0);
  for (const char* s : {"bptt", "checkpoint", "mrbp", "MRBP vs BPTT: memory x"}) CHECK(out.find(s) != std::string::npos);
  // The grad-norm column (last) is the same for every strategy.
  auto grad_norms = [](const std::string& text) {
    std::vector<std::string> v;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      for (const char* s : {"bptt ", "checkpoint ", "mrbp "})
        if (line.rfind(s, 0) == 0) v.push_back(line.substr(line.find_last_of(' ') + 1));
    return v;
  };
  const auto norms = grad_norms(out);
  REQUIRE(norms.size() == 3);
  CHECK(norms[0] == norms[1]);
  CHECK(norms[0] == norms[2]);
  // A model that predicts within its segment (RMT: targets, no next segment) runs too, with
  // equal gradients; it used to fail with an internal error on the next-segment rollout.
  const std::string rmt = dir + "/rmt.json";
  test::write_file(rmt, nlohmann::json{{"model", test::tiny_copy_run({})["model"]}}.dump());  // the shared tiny RMT
  const std::string ro = sh("--config " + rmt + " --batch 2 --horizon 3 --rollouts 1 --rounds 1 --threads 1", &code);
  CAPTURE(ro);
  REQUIRE(code == 0);
  const auto rnorms = grad_norms(ro);
  REQUIRE(rnorms.size() == 3);
  CHECK(rnorms[0] == rnorms[1]);
  CHECK(rnorms[0] == rnorms[2]);
  CHECK(ro.find("internal error") == std::string::npos);
  sh("--strategies bptt,sgd", &code);
  CHECK(code == 2);
  sh("--batch 0", &code);
  CHECK(code == 2);
}
