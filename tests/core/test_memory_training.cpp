// Training that reaches memory use (docs/training.md): the curriculum over segments, the
// memory-zeroed evaluations, the memory tasks in next-segment form, the QA task through the
// common trainer, checkpoints that carry their config (step/eval without --config, messages
// naming the differing fields), zoo packing, and the BLAS probe.
#include "core/data/qa_task.h"
#include "core/data/recall_tasks.h"
#include "core/io/safetensors.h"
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/platform/blas.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "core/train/zoo.h"
#include "tests/support/skip.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"
#include "tests/support/qa_forward.h"

#include <doctest/doctest.h>

#include <fstream>
#include <set>

using namespace mnemo;

namespace {

nlohmann::json tiny_rmt_json() {
  return nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 2, "segment_len": 7, "dim": 16, "heads": 2, "layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 4, "symbols": 4, "segments": 2, "train_size": 64, "valid_size": 16, "test_size": 16},
    "train": {"steps": 6, "batch": 4, "lr": 1e-2, "warmup": 2, "schedule": "linear", "eval_every": 2, "eval_batches": 1,
              "record_every": 0, "seed": 4}
  })");
}

std::string text_of(const torch::Tensor& ids) {
  std::string s;
  auto t = ids.to(torch::kInt64).contiguous();
  for (int64_t i = 0; i < t.numel(); ++i) s.push_back(static_cast<char>(t.data_ptr<int64_t>()[i]));
  return s;
}

}  // namespace

TEST_CASE("curriculum: config fields are checked by name - every task count start..max must fit the model") {
  auto rejects = [](const std::function<void(nlohmann::json&)>& edit, const char* needle) {
    auto j = tiny_rmt_json();
    edit(j);
    CHECK_THROWS_WITH_AS(TrainingConfig::from_json(j), doctest::Contains(needle), ConfigError);
  };
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"max", 1}}; }, "train.curriculum.max");
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"max", 3}, {"rule", "often"}}; }, "train.curriculum.rule");
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"max", 3}, {"rule", "every"}}; }, "train.curriculum.every");
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"max", 3}, {"threshold", 1.5}}; },
          "train.curriculum.threshold");
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"speed", 3}}; }, "train.curriculum.speed");
  // Copy of 4 symbols = 13 tokens: one segment needs segment_len 13 > 7.
  rejects([](auto& j) { j["train"]["curriculum"] = {{"start", 1}, {"max", 3}}; }, "curriculum count 1");
  auto j = tiny_rmt_json();
  j["train"]["curriculum"] = {{"start", 2}, {"max", 4}, {"rule", "every"}, {"every", 2}};
  auto c = TrainingConfig::from_json(j);
  CHECK(TrainingConfig::from_json(c.to_json()).to_json() == c.to_json());
  CHECK(c.to_json()["train"]["curriculum"]["every"] == 2);
}

TEST_CASE("curriculum: rule every adds a segment every N steps up to max - rule accuracy at an evaluation") {
  auto j = tiny_rmt_json();
  j["train"]["curriculum"] = {{"start", 2}, {"max", 4}, {"rule", "every"}, {"every", 2}};
  j["train"]["steps"] = 8;
  Trainer t(TrainingConfig::from_json(j));
  CHECK(t.segments() == 2);
  CHECK(t.task().segments() == 2);
  std::vector<CurriculumChange> changes;
  std::vector<std::pair<int64_t, int64_t>> evals;  // step, segments
  TrainCallbacks cb;
  cb.on_curriculum = [&](const CurriculumChange& c) { changes.push_back(c); };
  cb.on_eval = [&](const EvalMetrics& e) {
    if (!e.zero_memory) evals.emplace_back(e.step, e.segments);
  };
  t.run(cb);
  REQUIRE(changes.size() == 2);  // 2 -> 3 after step 2, 3 -> 4 after step 4, then at max
  CHECK(changes[0].step == 2);
  CHECK(changes[0].from == 2);
  CHECK(changes[0].to == 3);
  CHECK(changes[0].reason == "every 2 steps");
  CHECK(changes[1].step == 4);
  CHECK(changes[1].to == 4);
  CHECK(t.segments() == 4);
  CHECK(t.task().segments() == 4);
  // The evaluation of a step comes before the change that step makes.
  CHECK(evals == std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {4, 3}, {6, 4}, {8, 4}});

  // rule accuracy: a threshold every evaluation reaches moves at each evaluation (after
  // min_steps at the count); one no evaluation reaches never moves.
  auto a = tiny_rmt_json();
  a["train"]["curriculum"] = {{"start", 2}, {"max", 3}, {"rule", "accuracy"}, {"threshold", 0.0}, {"min_steps", 3}};
  Trainer ta(TrainingConfig::from_json(a));
  std::vector<CurriculumChange> ach;
  TrainCallbacks acb;
  acb.on_eval = [](const EvalMetrics&) {};
  acb.on_curriculum = [&](const CurriculumChange& c) { ach.push_back(c); };
  ta.run(acb);
  REQUIRE(ach.size() == 1);
  CHECK(ach[0].step == 4);  // the evaluation at step 2 is before min_steps = 3
  CHECK(ach[0].reason.find("valid accuracy") == 0);
  a["train"]["curriculum"]["threshold"] = 1.0;
  a["train"]["curriculum"]["min_steps"] = 0;
  a["train"]["lr"] = 1e-6;
  Trainer tb(TrainingConfig::from_json(a));
  tb.run(acb);
  CHECK(tb.segments() == 2);
}

TEST_CASE("curriculum: the count survives a checkpoint - --resume continues it - records parse as a segments curve") {
  auto j = tiny_rmt_json();
  j["train"]["curriculum"] = {{"start", 2}, {"max", 4}, {"rule", "every"}, {"every", 3}};
  j["train"]["steps"] = 9;
  Trainer t(TrainingConfig::from_json(j));
  for (int i = 0; i < 4; ++i) {
    t.train_step();
    t.advance_curriculum(nullptr);
  }
  CHECK(t.segments() == 3);
  Checkpoint ck = t.checkpoint();
  CHECK(ck.metadata.at("segments") == "3");
  CHECK(ck.metadata.at("curriculum_since") == "3");
  Trainer r(TrainingConfig::from_json(j));
  CHECK(r.segments() == 2);
  r.restore(ck, "memory");
  CHECK(r.segments() == 3);
  CHECK(r.task().segments() == 3);
  // Same next batch, same loss: the resumed run trains on the same segmentation.
  CHECK(r.train_step().loss == doctest::Approx(t.train_step().loss).epsilon(1e-6));

  // Through the CLI: interrupted at step 4 (by --steps), resumed to 9.
  const std::string dir = test::temp_dir("curriculum");
  std::ofstream(dir + "/c.json") << j.dump();
  auto first = test::run_cli("train --config " + dir + "/c.json --out " + dir + "/run --steps 4");
  INFO(first.output);
  REQUIRE(first.code == 0);
  CHECK(first.output.find("curriculum: 2 -> 3 segments after step 3") != std::string::npos);
  auto ev = test::run_cli_here("eval --checkpoint " + dir + "/run/checkpoints/step-000000004.safetensors --json");
  INFO(ev.output);
  REQUIRE(ev.code == 0);
  CHECK(nlohmann::json::parse(ev.output.substr(ev.output.find('{')))["segments"] == 3);
  // The session, its checkpoints/ folder and the latest pointer all mean that checkpoint.
  for (const char* p : {"/run", "/run/", "/run/checkpoints", "/run/checkpoints/latest"}) {
    CAPTURE(p);
    auto e = test::run_cli_here("eval --checkpoint " + dir + p + " --json");
    REQUIRE(e.code == 0);
    CHECK(e.output == ev.output);
  }
  auto notsession = test::run_cli_here("eval --checkpoint " + dir + " --json");
  CHECK(notsession.code == 2);
  CHECK(notsession.output.find("is a directory but not a training session") != std::string::npos);
  auto res = test::run_cli("train --out " + dir + "/run --resume --steps 9");
  INFO(res.output);
  REQUIRE(res.code == 0);
  CHECK(res.output.find("now at 3 segments") != std::string::npos);
  CHECK(res.output.find("curriculum: 3 -> 4 segments after step 6") != std::string::npos);
  CHECK(res.output.find("2 -> 3") == std::string::npos);  // not started over
  auto log = parse_run_log(io::Session::open(dir + "/run", 3, io::SessionAccess::kReadOnly).read_metrics());
  REQUIRE(log.curricula.size() == 2);
  CHECK(log.curricula[0]["from"] == 2);
  CHECK(log.curricula[1]["to"] == 4);
  auto seg = log.curves("segments");
  REQUIRE(seg.size() == 1);
  CHECK(seg[0].y.front() == 2);
  CHECK(seg[0].y.back() == 4);
  CHECK(seg[0].x.back() == 9);
  // The step function: 2 until step 3, then 3 until step 6, then 4.
  CHECK(seg[0].x == std::vector<double>{0, 3, 3, 6, 6, 9});
  CHECK(seg[0].y == std::vector<double>{2, 2, 3, 3, 4, 4});
  // The same changes as chart markers.
  const auto marks = log.curriculum_marks();
  REQUIRE(marks.size() == 2);
  CHECK(marks[0].step == 3);
  CHECK(marks[0].from == 2);
  CHECK(marks[0].to == 3);
  CHECK(marks[1].step == 6);
  CHECK(marks[1].to == 4);
  CHECK(marks[1].reason == "every 3 steps");
  // Final test evaluations ran at 4 segments, with and without memory.
  int finals = 0;
  for (const auto& e : log.evals)
    if (e.value("final", false) && e["split"] == "test" && e["step"] == 9) {
      ++finals;
      CHECK(e["segments"] == 4);
    }
  CHECK(finals == 2);
}

TEST_CASE("evaluations: every evaluation also runs with the memory zeroed, recorded as its own curve") {
  Trainer t(TrainingConfig::from_json(tiny_rmt_json()));
  CHECK(t.has_memory());
  std::vector<bool> zero;
  TrainCallbacks cb;
  cb.on_eval = [&](const EvalMetrics& e) { zero.push_back(e.zero_memory); };
  t.run(cb);
  CHECK(zero == std::vector<bool>{false, true, false, true, false, true});
  // A model without memory has nothing to zero; eval_zero_memory false turns it off.
  auto j = tiny_rmt_json();
  j["model"]["model"] = "transformer";
  Trainer n(TrainingConfig::from_json(j));
  CHECK_FALSE(n.has_memory());
  zero.clear();
  n.run(cb);
  CHECK(zero == std::vector<bool>{false, false, false});
  j = tiny_rmt_json();
  j["train"]["eval_zero_memory"] = false;
  Trainer off(TrainingConfig::from_json(j));
  zero.clear();
  off.run(cb);
  CHECK(zero == std::vector<bool>{false, false, false});

  // The log: "valid" and "valid, memory zeroed" apart.
  std::vector<nlohmann::json> recs = {
      {{"type", "eval"}, {"step", 2}, {"split", "valid"}, {"loss", 1.0}, {"accuracy", 0.9}},
      {{"type", "eval"}, {"step", 2}, {"split", "valid"}, {"loss", 2.0}, {"accuracy", 0.1}, {"zero_memory", true}},
      {{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 0.5}, {"accuracy", 0.95}},
      {{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 2.1}, {"accuracy", 0.12}, {"zero_memory", true}}};
  auto curves = parse_run_log(recs).curves("accuracy");
  REQUIRE(curves.size() == 2);
  CHECK(curves[0].name == "valid");
  CHECK(curves[0].y == std::vector<double>{0.9, 0.95});
  CHECK(curves[1].name == kValidZeroMemoryCurve);
  CHECK(curves[1].y == std::vector<double>{0.1, 0.12});
}

TEST_CASE("memory zeroed: float memory becomes zeros, integer memory the initial state (MTN's empty entries)") {
  // An RMT whose memory is needed: zeroing changes the loss; evaluating twice is deterministic.
  Trainer t(TrainingConfig::from_json(tiny_rmt_json()));
  for (int i = 0; i < 3; ++i) t.train_step();
  EvalOptions z;
  z.zero_memory = true;
  const auto a = t.evaluate(Split::kValid), b = t.evaluate(Split::kValid, z);
  CHECK(a.loss != doctest::Approx(b.loss));
  CHECK(t.evaluate(Split::kValid, z).loss == doctest::Approx(b.loss));
  // MTN: with the memory zeroed, the query sees only empty entries, exactly as a model that
  // starts the query from its initial memory.
  auto j = test::tiny_mtn_qa_json(0);
  Trainer m(TrainingConfig::from_json(j));
  const auto zeroed = m.evaluate(Split::kValid, z);
  auto& task = dynamic_cast<const QaTaskSource&>(m.task());
  auto tb = task.batch(Split::kValid, {0, 1, 2, 3}, torch::kCPU);
  torch::NoGradGuard g;
  m.model()->eval();
  auto out = m.model()->step(tb.segments.back(), m.model()->initial_memory(4), nullptr);
  CHECK(zeroed.loss == doctest::Approx((out.loss_sum / out.loss_count).item<double>()).epsilon(1e-5));
}

TEST_CASE("copy-recall / assoc-recall: the information is in segment 0 and asked for in the last segment only") {
  RecallTask copy(nlohmann::json{{"name", "copy-recall"}, {"segments", 4}, {"source_len", 6}, {"symbols", 5}});
  CHECK(copy.segment_len() == 7);
  CHECK(copy.length() == 28);
  CHECK(copy.chance() == doctest::Approx(0.2));
  auto ex = copy.example(Split::kTest, 3);
  const std::string text = ex.text();
  CHECK(text[0] == '>');
  CHECK(text[7] == '.');
  CHECK(text[14] == '.');
  CHECK(text[21] == '?');
  CHECK(text.substr(1, 6) == text.substr(22, 6));  // the copy
  for (int i = 1; i <= 6; ++i) CHECK((text[i] >= 'a' && text[i] <= 'e'));
  for (int i = 8; i < 21; ++i)
    if (i != 14) CHECK((text[i] >= 'A' && text[i] <= 'Z'));  // distractors carry no symbol
  for (int i = 0; i < 28; ++i) CHECK(ex.scored[i] == (i >= 22 ? 1 : 0));
  // Deterministic; another index differs; more segments keep the same facts.
  CHECK(copy.example(Split::kTest, 3).text() == text);
  CHECK(copy.example(Split::kTest, 4).text() != text);
  RecallTask copy6(nlohmann::json{{"name", "copy-recall"}, {"segments", 6}, {"source_len", 6}, {"symbols", 5}});
  const std::string t6 = copy6.example(Split::kTest, 3).text();
  CHECK(t6.substr(0, 7) == text.substr(0, 7));
  CHECK(t6.substr(35) == text.substr(21));

  auto b = copy.batch(Split::kTrain, {0, 1}, torch::kCPU);
  REQUIRE(b.segments.size() == 4);
  // Memformer: the decoder of segment 2 predicts segment 3; only its source bytes count.
  CHECK(b.segments[2].next_valid.sum().item<int64_t>() == 2 * 6);
  CHECK(b.segments[1].next_valid.sum().item<int64_t>() == 0);
  CHECK(b.segments[3].next_valid.sum().item<int64_t>() == 0);  // past the end: no loss
  CHECK(text_of(b.segments[2].next_tokens[0]) == text_of(b.segments[3].tokens[0]));
  // Decoders: the last token of segment 2 predicts '?' (not scored); '?' predicts the first
  // source byte (scored), and so on through the segment.
  CHECK(b.segments[3].target_valid.sum().item<int64_t>() == 2 * 6);
  CHECK(b.segments[2].target_valid.sum().item<int64_t>() == 0);
  CHECK(b.scored[3].equal(b.segments[3].target_valid));

  RecallTask assoc(nlohmann::json{{"name", "assoc-recall"}, {"segments", 3}, {"pairs", 3}, {"symbols", 6}});
  CHECK(assoc.segment_len() == 7);
  auto ea = assoc.example(Split::kValid, 11);
  const std::string at = ea.text();
  std::map<char, char> facts, asked;
  for (int i = 1; i < 7; i += 2) facts[at[i]] = at[i + 1];
  for (int i = 15; i < 21; i += 2) {
    asked[at[i]] = at[i + 1];
    CHECK(ea.scored[i] == 0);
    CHECK(ea.scored[i + 1] == 1);
    CHECK((at[i + 1] >= '0' && at[i + 1] <= '9'));
  }
  CHECK(facts.size() == 3);  // distinct keys
  CHECK(facts == asked);     // every key asked once, with its value

  CHECK_THROWS_WITH_AS(RecallTask(nlohmann::json{{"name", "copy-recall"}, {"segments", 2}}),
                       doctest::Contains("task.segments"), ConfigError);
  CHECK_THROWS_WITH_AS(RecallTask(nlohmann::json{{"name", "assoc-recall"}, {"pairs", 8}, {"symbols", 5}}),
                       doctest::Contains("task.symbols"), ConfigError);
  CHECK_THROWS_WITH_AS(RecallTask(nlohmann::json{{"name", "copy-recall"}, {"pairs", 3}}), doctest::Contains("task.pairs"),
                       ConfigError);
  CHECK(make_task(nlohmann::json{{"name", "assoc-recall"}})->segments() == 3);
}

TEST_CASE("copy-recall with 2 facts: written in segments 0 and 1, asked in the last two in the same order") {
  const nlohmann::json one = {{"name", "copy-recall"}, {"segments", 5}, {"source_len", 4}, {"symbols", 6}};
  nlohmann::json two = one;
  two["facts"] = 2;
  RecallTask t1(one), t2(two);
  CHECK(t2.segment_len() == 5);
  CHECK(t2.length() == 25);
  const std::string a = t1.example(Split::kTest, 7).text(), b = t2.example(Split::kTest, 7).text();
  // ">abcd>efgh.XXXX?abcd?efgh": the first fact is the one-fact episode's.
  CHECK(b.substr(0, 5) == a.substr(0, 5));
  CHECK(b[5] == '>');
  CHECK(b[10] == '.');
  CHECK(b[15] == '?');
  CHECK(b[20] == '?');
  CHECK(b.substr(16, 4) == b.substr(1, 4));
  CHECK(b.substr(21, 4) == b.substr(6, 4));
  for (int i = 6; i < 10; ++i) CHECK((b[i] >= 'a' && b[i] <= 'f'));
  for (int i = 11; i < 15; ++i) CHECK((b[i] >= 'A' && b[i] <= 'Z'));
  const auto ex = t2.example(Split::kTest, 7);
  for (int i = 0; i < 25; ++i) CHECK(ex.scored[i] == ((i > 15 && i < 20) || i > 20 ? 1 : 0));
  // Memformer: the decoders of segments 2 and 3 predict the two answers.
  auto batch = t2.batch(Split::kTrain, {0}, torch::kCPU);
  CHECK(batch.segments[2].next_valid.sum().item<int64_t>() == 4);
  CHECK(batch.segments[3].next_valid.sum().item<int64_t>() == 4);
  CHECK(batch.segments[1].next_valid.sum().item<int64_t>() == 0);
  // The config round-trips; one fact writes no field (older sessions read the same).
  CHECK(t2.to_json()["facts"] == 2);
  CHECK_FALSE(t1.to_json().contains("facts"));
  CHECK(RecallTask(t2.to_json()).example(Split::kTest, 7).text() == b);
  // No room for a distractor, or too many facts: the field and the fix are named.
  nlohmann::json tight = two;
  tight["segments"] = 4;
  CHECK_THROWS_WITH_AS(RecallTask{tight}, doctest::Contains("use at least 5 segments"), ConfigError);
  nlohmann::json many = one;
  many["facts"] = 65;
  many["segments"] = 200;
  CHECK_THROWS_WITH_AS(RecallTask{many}, doctest::Contains("task.facts"), ConfigError);
}

TEST_CASE("scored tokens of an episode: a generated task's fixed layout, for a prefix - none for text or a longer document") {
  // An episode such as ">abcd>efgh.QKZM?abcd?efgh" (facts, a distractor, the two questions):
  // the answers (16..19, 21..24) are scored, nothing else.
  const nlohmann::json two = {{"name", "copy-recall"}, {"segments", 5}, {"source_len", 4}, {"symbols", 6}, {"facts", 2}};
  std::vector<uint8_t> want(25, 0);
  for (int i = 16; i < 25; ++i) want[static_cast<size_t>(i)] = i != 20;
  CHECK(episode_scored_tokens(two, 25) == want);
  CHECK(episode_scored_tokens(*make_task(two), 25) == want);
  // A prefix (a probe cut to fewer segments): the same positions, cut.
  CHECK(episode_scored_tokens(two, 18) == std::vector<uint8_t>(want.begin(), want.begin() + 18));
  CHECK(episode_scored_tokens(two, 26).empty());  // longer than an episode: no layout to name
  CHECK(episode_scored_tokens(two, 0).empty());
  // The built-in copy task agrees with its own examples' scored flags.
  TaskConfig copy;
  copy.name = "copy";
  copy.segments = 3;
  copy.source_len = 5;
  Task t(copy);
  CHECK(episode_scored_tokens(copy.to_json(), t.length()) == t.example(Split::kTest, 3).scored);
  // A quadratic's episodes are padded to one layout too: its answer step.
  TaskConfig quad = copy;
  quad.name = "quadratic";
  CHECK(episode_scored_tokens(quad.to_json(), Task(quad).length()) == Task(quad).example(Split::kTest, 5).scored);
  // Text and data sets score every token; an unreadable task config names nothing.
  CHECK(episode_scored_tokens(nlohmann::json{{"name", "text"}, {"length", 64}, {"segments", 2}}, 64).empty());
  CHECK(episode_scored_tokens(nlohmann::json{{"name", "copy-recall"}, {"segments", -4}}, 10).empty());
  CHECK(episode_scored_tokens(nlohmann::json(), 10).empty());
}

TEST_CASE("probe recordings: scored_loss averages the losses of the tokens the task scores, by the trace contract") {
  const nlohmann::json task = {{"name", "copy-recall"}, {"segments", 5}, {"source_len", 4}, {"symbols", 6}, {"facts", 2}};
  auto src = make_task(task);
  const Document probe = probe_document(*src, 5);
  const auto scored = episode_scored_tokens(*src, probe.size());
  for (const std::string kind : {"memformer", "rmt"}) {
    CAPTURE(kind);
    const ModelConfig mc = kind == "memformer" ? test::tiny_memformer(4, src->segment_len())
                                               : test::tiny_decoder(kind, 4, src->segment_len());
    MemoryModel m = make_model(mc, 3);
    ProbeRecording r = record_probe(m, probe, src->segment_len(), 7, recording_trace_spec(), scored);
    // Independently: segment s's lm.loss value j predicts token (s+1)L + j (Memformer) or
    // sL + j + 1 (RMT) (docs/formats.md); average those of the scored tokens.
    const int64_t L = src->segment_len();
    double sum = 0;
    int64_t n = 0;
    for (const auto& [name, t] : r.tensors) {
      const auto slash = name.find('/');
      if (slash == std::string::npos || name.substr(slash + 1) != "lm.loss") continue;
      const int64_t seg = std::stoll(name.substr(name.find_first_of("0123456789")));
      for (int64_t j = 0; j < t.size(1); ++j) {
        const int64_t tok = kind == "memformer" ? (seg + 1) * L + j : seg * L + j + 1;
        if (tok < static_cast<int64_t>(scored.size()) && scored[static_cast<size_t>(tok)]) {
          sum += t[0][j].item<double>();
          ++n;
        }
      }
    }
    CHECK(n == 8);  // both answers' 4 symbols
    CHECK(r.scored_tokens == n);
    CHECK(r.scored_loss == doctest::Approx(sum / static_cast<double>(n)).epsilon(1e-6));
    // Without a layout: no scored loss.
    CHECK(std::isnan(record_probe(m, probe, L, 7).scored_loss));
  }
}

TEST_CASE("copy-recall: a Memformer trains on it, scored on the source bytes of the last segment only") {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "memformer", "slots": 4, "segment_len": 5, "dim": 16, "heads": 2, "layers": 1, "dec_layers": 1,
              "ff": 32},
    "task": {"name": "copy-recall", "segments": 3, "source_len": 4, "symbols": 4, "train_size": 256, "valid_size": 32,
             "test_size": 32},
    "train": {"steps": 2, "batch": 8, "lr": 3e-3, "eval_batches": 4, "record_every": 0}})");
  Trainer t(TrainingConfig::from_json(j));
  auto m = t.train_step();
  CHECK(std::isfinite(m.loss));
  // Untrained, the loss is about ln(vocabulary); scored chars are the 4 source bytes of 32 examples.
  auto e = t.evaluate(Split::kValid);
  CHECK(e.chars == 32 * 4);
  CHECK(e.segments == 3);
}

TEST_CASE("qa task through the trainer: reading chunks, a query with the memory fixed, QA metrics per evaluation") {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "mtn", "slots": 4, "segment_len": 48, "dim": 16, "heads": 2, "ff": 32, "n1_layers": 1, "n2_layers": 1},
    "task": {"name": "qa", "chunk_len": 48, "doc_chunks": 3, "facts": 2, "candidates": 2, "fact_chunks": 1,
             "train_size": 64, "valid_size": 8, "test_size": 8},
    "train": {"steps": 2, "batch": 4, "eval_batches": 2, "record_every": 0}})");
  Trainer t(TrainingConfig::from_json(j));
  auto& task = dynamic_cast<const QaTaskSource&>(t.task());
  CHECK(task.segments() == 4);
  // fact_chunks 1: every fact sentence is in chunk 0, nothing of it later.
  for (int i = 0; i < 20; ++i) {
    auto ex = task.qa().example(QaSplit::kTrain, i);
    CHECK(ex.document.size() == 3 * 48);
    CHECK(ex.fact_begin < 48);
    CHECK(ex.document.find(ex.answer, 48) == std::string::npos);
    CHECK(ex.document.find(" lives in ", 48) == std::string::npos);
  }
  auto tb = task.batch(Split::kTrain, {0, 1}, torch::kCPU);
  CHECK(tb.memory_frozen_from == 3);
  CHECK(tb.segments.size() == 4);
  CHECK(tb.segments[0].target_valid.sum().item<int64_t>() == 0);
  CHECK(tb.scored[3].sum().item<int64_t>() > 0);

  // The trainer's loss equals qa_forward's on the same examples (memory fixed for the query).
  {
    torch::NoGradGuard g;
    t.model()->eval();
    auto ex0 = task.qa().example(QaSplit::kValid, 0), ex1 = task.qa().example(QaSplit::kValid, 1);
    auto f = test::qa_forward(*t.model(), task.qa().batch({ex0, ex1}));
    auto s = evaluate_model(*t.model(), task, Split::kValid, 1, 2);
    CHECK(s.loss() == doctest::Approx(f.loss.item<double>()).epsilon(1e-5));
  }
  CHECK_FALSE(t.train_step().non_finite);
  auto e = t.evaluate(Split::kValid);
  for (const char* k : {"choice_accuracy", "recall", "fpr", "pseudo_precision", "pseudo_f1"}) {
    CAPTURE(k);
    REQUIRE(e.extra.count(k));
    CHECK(e.extra.at(k) >= 0.0);
    CHECK(e.extra.at(k) <= 1.0);
  }
  // The no-memory baseline skips the reading chunks and still scores the query.
  j["model"]["model"] = "no-memory";
  Trainer n(TrainingConfig::from_json(j));
  CHECK(n.evaluate(Split::kValid).extra.count("choice_accuracy"));
  // Models that cannot tag answers, and strategies that cannot freeze the memory, are refused.
  j["model"] = {{"model", "rmt"}, {"slots", 2}, {"segment_len", 48}, {"dim", 16}, {"heads", 2}};
  CHECK_THROWS_WITH_AS(Trainer(TrainingConfig::from_json(j)), doctest::Contains("MTN-family"), ConfigError);
}

TEST_CASE("checkpoints name their config: read_weights_file, differing fields, weights-only zoo packing") {
  auto j = tiny_rmt_json();
  Trainer t(TrainingConfig::from_json(j));
  t.train_step();
  const std::string dir = test::temp_dir("ckcfg");
  save_checkpoint(dir + "/c.safetensors", t.checkpoint());
  WeightsFile f = read_weights_file(dir + "/c.safetensors");
  CHECK(f.kind == "training checkpoint");
  CHECK(f.step == 1);
  CHECK(f.training_config["task"]["name"] == "copy");
  CHECK(f.model_config["slots"] == 2);
  for (const auto& [k, v] : f.weights) CHECK(k.rfind("optim.", 0) != 0);

  CHECK(config_differences(nlohmann::json{{"a", 1}, {"b", {{"c", 2}}}}, nlohmann::json{{"a", 1.0}, {"b", {{"c", 3}}}},
                           "m") == std::vector<std::string>{"m.b.c: 2 vs 3"});
  CHECK(config_differences(nlohmann::json{{"a", 1}}, nlohmann::json{{"d", "x"}}) ==
        std::vector<std::string>{"a: 1 vs absent", "d: absent vs \"x\""});

  ModelConfig other = t.config().model;
  other.slots = 3;
  other.dim = 32;
  auto m = make_model(other, 0);
  try {
    load_weights_checked(*m, other, f, "other.json");
    FAIL("loaded weights of another config");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("model.slots: 2 vs 3") != std::string::npos);
    CHECK(msg.find("model.dim: 16 vs 32") != std::string::npos);
    CHECK(msg.find("other.json") != std::string::npos);
  }

  // Zoo: weights only, config + summary in the metadata, listed from the header.
  ZooEntry z = pack_zoo_model(dir + "/c.safetensors", dir + "/zoo/tiny-rmt.safetensors", "tiny-rmt", "a tiny RMT",
                              "docs/zoo/tiny-rmt.md");
  CHECK(z.bytes > 0);
  std::map<std::string, std::string> meta;
  auto tensors = io::load_safetensors(dir + "/zoo/tiny-rmt.safetensors", &meta);
  CHECK(meta.at("format") == kZooFormat);
  CHECK(meta.at("summary") == "a tiny RMT");
  CHECK(tensors.size() == f.weights.size());
  CHECK(read_safetensors_metadata(dir + "/zoo/tiny-rmt.safetensors") == meta);
  auto listed = list_zoo(dir + "/zoo");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].name == "tiny-rmt");
  CHECK(listed[0].config["model"]["slots"] == 2);
  CHECK(read_weights_file(dir + "/zoo/tiny-rmt.safetensors").kind == "zoo model");
  CHECK_THROWS_WITH_AS(pack_zoo_model(dir + "/c.safetensors", dir + "/x.safetensors", "Bad Name", "s", "c"),
                       doctest::Contains("a-z"), ConfigError);
  // Over the 4 MiB budget: refused, nothing written.
  auto big = tiny_rmt_json();
  big["model"]["dim"] = 256;
  big["model"]["ff"] = 1024;
  big["model"]["layers"] = 2;
  big["model"]["heads"] = 4;
  Trainer tb(TrainingConfig::from_json(big));
  save_checkpoint(dir + "/big.safetensors", tb.checkpoint());
  CHECK_THROWS_WITH_AS(pack_zoo_model(dir + "/big.safetensors", dir + "/big-zoo.safetensors", "big", "s", "c"),
                       doctest::Contains("budget"), ConfigError);
  CHECK_FALSE(test::path_exists(dir + "/big-zoo.safetensors"));
}

TEST_CASE("cli: step, eval and zoo take a train checkpoint with no --config - another config names the fields") {
  const std::string dir = test::temp_dir("ckcli");
  std::ofstream(dir + "/c.json") << tiny_rmt_json().dump();
  auto tr = test::run_cli("train --config " + dir + "/c.json --out " + dir + "/run --steps 2 --threads 1");
  INFO(tr.output);
  REQUIRE(tr.code == 0);
  const std::string ck = dir + "/run/checkpoints/step-000000002.safetensors";
  std::ofstream(dir + "/doc.txt") << "abcd>abcdabcd efgh>efghefgh";
  auto st = test::run_cli("step --checkpoint " + ck + " --doc " + dir + "/doc.txt --out " + dir + "/step --to 1 --format csv");
  INFO(st.output);
  CHECK(st.code == 0);
  CHECK(st.output.find("model: rmt weights from") != std::string::npos);
  CHECK(test::path_exists(dir + "/step/step-0001/trace.safetensors"));
  auto ev = test::run_cli("eval --checkpoint " + ck + " --json --split valid");
  INFO(ev.output);
  CHECK(ev.code == 0);
  auto ej = nlohmann::json::parse(ev.output.substr(ev.output.find('{')));
  CHECK(ej["step"] == 2);
  auto ez = test::run_cli_here("eval --checkpoint " + ck + " --json --split valid --zero-memory");
  CHECK(ez.code == 0);
  CHECK(nlohmann::json::parse(ez.output.substr(ez.output.find('{')))["zero_memory"] == true);
  // A config whose model does not fit: exit 2, both values of each differing field named.
  auto other = tiny_rmt_json();
  other["model"]["slots"] = 3;
  std::ofstream(dir + "/other.json") << other.dump();
  auto bad = test::run_cli_here("step --config " + dir + "/other.json --checkpoint " + ck + " --doc " + dir +
                           "/doc.txt --out " + dir + "/bad");
  INFO(bad.output);
  CHECK(bad.code == 2);
  CHECK(bad.output.find("model.slots: 2 vs 3") != std::string::npos);
  auto bad_eval = test::run_cli_here("eval --config " + dir + "/other.json --checkpoint " + ck);
  CHECK(bad_eval.code == 2);
  CHECK(bad_eval.output.find("model.slots: 2 vs 3") != std::string::npos);
  // A weights file with no config cannot be evaluated without --config.
  {
    auto w = read_weights_file(ck).weights;
    io::save_safetensors(dir + "/bare.safetensors", w);
  }
  auto bare = test::run_cli_here("eval --checkpoint " + dir + "/bare.safetensors");
  CHECK(bare.code == 2);
  CHECK(bare.output.find("pass --config") != std::string::npos);
  // zoo pack + list, then eval of the zoo file.
  auto pk = test::run_cli("zoo pack --session " + dir + "/run --name tiny --summary 'tiny RMT' --out " + dir +
                          "/zoo/tiny.safetensors");
  INFO(pk.output);
  REQUIRE(pk.code == 0);
  auto ls = test::run_cli_here("zoo list --dir " + dir + "/zoo");
  CHECK(ls.output.find("tiny  (") != std::string::npos);
  CHECK(ls.output.find("tiny RMT") != std::string::npos);
  auto ze = test::run_cli_here("eval --checkpoint " + dir + "/zoo/tiny.safetensors --json --split valid");
  CHECK(ze.code == 0);
  CHECK(nlohmann::json::parse(ze.output.substr(ze.output.find('{')))["accuracy"] == ej["accuracy"]);
  // --set edits the packed config (here the task's test size) and is recorded; the weights are the same.
  auto ps = test::run_cli("zoo pack --session " + dir + "/run --name tiny-set --summary s --out " + dir +
                          "/zoo/tiny-set.safetensors --set task.test_size=4 --set train.eval_batches=-1");
  INFO(ps.output);
  REQUIRE(ps.code == 0);
  const auto meta = read_safetensors_metadata(dir + "/zoo/tiny-set.safetensors");
  CHECK(nlohmann::json::parse(meta.at("config_sets")) ==
        nlohmann::json::array({"task.test_size=4", "train.eval_batches=-1"}));
  CHECK(nlohmann::json::parse(meta.at("config"))["task"]["test_size"] == 4);
  CHECK(read_safetensors_metadata(dir + "/zoo/tiny.safetensors").count("config_sets") == 0);
  auto zs = test::run_cli_here("eval --checkpoint " + dir + "/zoo/tiny-set.safetensors --json");
  INFO(zs.output);
  CHECK(zs.code == 0);
  CHECK(nlohmann::json::parse(zs.output.substr(zs.output.find('{')))["examples"] == 4);
  const auto wa = io::load_safetensors(dir + "/zoo/tiny-set.safetensors"), wb = io::load_safetensors(dir + "/zoo/tiny.safetensors");
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK((wa[i].first == wb[i].first && wa[i].second.equal(wb[i].second)));
  // A set the config refuses, or not key=value: exit 2, naming it, nothing written.
  for (const char* bad : {"model.dim=-3", "task.test_size"}) {
    auto pb = test::run_cli_here("zoo pack --session " + dir + "/run --name tiny-bad --summary s --out " + dir +
                            "/zoo/tiny-bad.safetensors --set " + bad);
    INFO(pb.output);
    CHECK(pb.code == 2);
    CHECK(pb.output.find(std::string(bad).substr(0, 9)) != std::string::npos);
    CHECK_FALSE(test::path_exists(dir + "/zoo/tiny-bad.safetensors"));
  }
}

TEST_CASE("BLAS probe: names the object that defines sgemm_ - the reference BLAS is flagged with the fix") {
  const platform::BlasInfo b = platform::probe_blas();
  CAPTURE(b.summary());
  REQUIRE(b.kind != platform::BlasKind::kUnknown);
  CHECK_FALSE(b.path.empty());
  CHECK(test::path_exists(b.real_path));
  CHECK_FALSE(b.loaded.empty());
  CHECK(std::find(b.loaded.begin(), b.loaded.end(), b.real_path) != b.loaded.end());
  if (b.kind == platform::BlasKind::kOpenBlas) CHECK(b.name.find("OpenBLAS") != std::string::npos);
  auto info = test::run_cli("info");
  CHECK(info.code == 0);
  CHECK(info.output.find("BLAS: " + b.summary().substr(0, 8)) != std::string::npos);
  const std::string ref = "/usr/lib/x86_64-linux-gnu/blas";
  if (!test::path_exists(ref + "/libblas.so.3"))
    MNEMO_SKIP("the reference BLAS (Debian package libblas3) is not installed; cannot load it to check the warning");
  // Loading the reference BLAS first: the probe must see it, and info must warn with the fix.
  const auto r = test::run_shell("LD_LIBRARY_PATH=" + ref + " " + std::string(MNEMO_BINARY) + " info --threads 1");
  CHECK(r.code == 0);
  const std::string& out = r.output;
  INFO(out);
  CHECK(out.find("BLAS: reference BLAS (Netlib)") != std::string::npos);
  CHECK(out.find("warning: the reference BLAS is slow") != std::string::npos);
  CHECK(out.find("bash .ci/setup") != std::string::npos);
  CHECK(out.find("CPU threads (intra-op): 1 of") != std::string::npos);
}

TEST_CASE("threads: the default follows OMP_NUM_THREADS when it is a positive integer, else 1 - --threads 0 is one per core") {
  const std::string cores = std::to_string(platform::cpu_cores());
  const std::string bin = MNEMO_BINARY;
  auto a = test::run_shell("OMP_NUM_THREADS=3 " + bin + " info");
  CHECK(a.code == 0);
  CHECK(a.output.find("CPU threads (intra-op): 3 of " + cores + " cores (--threads N; default 3, from OMP_NUM_THREADS)") !=
        std::string::npos);
  for (const char* bad : {"0", "two", ""}) {
    CAPTURE(bad);
    auto b = test::run_shell(std::string("OMP_NUM_THREADS='") + bad + "' " + bin + " info");
    CHECK(b.code == 0);
    CHECK(b.output.find("CPU threads (intra-op): 1 of " + cores + " cores (--threads N; default 1, as OMP_NUM_THREADS is not set)") !=
          std::string::npos);
  }
  auto c = test::run_shell("env -u OMP_NUM_THREADS " + bin + " info");
  CHECK(c.output.find("CPU threads (intra-op): 1 of " + cores + " cores (--threads N; default 1, as OMP_NUM_THREADS is not set)") !=
        std::string::npos);
  auto d = test::run_shell("OMP_NUM_THREADS=3 " + bin + " --threads 1 info");  // the flag wins
  CHECK(d.output.find("CPU threads (intra-op): 1 of") != std::string::npos);
  auto e = test::run_shell("OMP_NUM_THREADS=1 " + bin + " --threads 0 info");  // 0: one per core
  CHECK(e.output.find("CPU threads (intra-op): " + cores + " of " + cores + " cores") != std::string::npos);
  auto f = test::run_shell(bin + " --threads -2 info");
  CHECK(f.code == 2);
  CHECK(f.output.find("--threads -2 must be >= 1 (0 = one per core)") != std::string::npos);
}

TEST_CASE("bench blas: both children report, a training config is timed under each BLAS, ratios printed") {
  const std::string ref = "/usr/lib/x86_64-linux-gnu/blas";
  if (!test::path_exists(ref + "/libblas.so.3"))
    MNEMO_SKIP("the reference BLAS (Debian package libblas3) is not installed; bench blas cannot load it");
  const std::string dir = test::temp_dir("bench-blas");
  test::write_file(dir + "/tiny.json", R"({"model": {"model": "rmt", "slots": 2, "segment_len": 8, "dim": 16, "heads": 2,
      "layers": 1, "ff": 32}, "task": {"name": "copy", "source_len": 4, "symbols": 4, "segments": 2},
      "train": {"steps": 2, "batch": 2}})");
  auto r = test::run_cli("bench blas --configs " + dir + "/tiny.json --steps 1 --repeats 1 --segments 2");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("reference: reference BLAS") != std::string::npos);
  CHECK(r.output.find("tiny.json") != std::string::npos);
  auto bad = test::run_cli("bench blas --reference-dir " + dir);
  CHECK(bad.code == 2);
  CHECK(bad.output.find("no libblas.so.3 in '" + dir + "'") != std::string::npos);
}

TEST_CASE("evaluate_model by position: the loss of each segment and position equals an explicit stepping of the batch, "
          "with the memory carried, reset to the initial memory and zeroed") {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 2, "segment_len": 7, "dim": 16, "heads": 2, "layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 4, "symbols": 6, "segments": 3, "train_size": 16, "valid_size": 6, "test_size": 6},
    "train": {"steps": 1, "batch": 3, "eval_batches": 2, "record_every": 0, "seed": 3}})");
  Trainer t(TrainingConfig::from_json(j));
  auto& model = *t.model();
  model.eval();
  // The explicit computation: two batches of 3, per-token cross-entropy of the logits against
  // the within-segment targets where target_valid.
  for (int mode = 0; mode < 3; ++mode) {  // 0 carried, 1 reset, 2 zeroed
    CAPTURE(mode);
    PositionLosses got;
    const ScoreTotals s = evaluate_model(model, t.task(), Split::kValid, 2, 3, mode == 2, 0, 1, &got, mode == 1);
    const auto L = static_cast<size_t>(t.task().segment_len());
    std::vector<double> seg(3, 0.0), pos(L, 0.0), seg_n(3, 0.0), pos_n(L, 0.0);
    torch::NoGradGuard g;
    for (int64_t first = 0; first < 6; first += 3) {
      auto tb = t.task().batch(Split::kValid, {first, first + 1, first + 2}, torch::kCPU);
      const MemoryState init = model.initial_memory(3);
      MemoryState mem = init;
      for (size_t k = 0; k < tb.segments.size(); ++k) {
        if (k > 0 && mode == 1) mem = init;
        if (k > 0 && mode == 2)
          for (auto& [name, v] : mem.tensors) v = torch::zeros_like(v);
        const auto& in = tb.segments[k];
        auto out = model.step(in, mem, nullptr);
        auto ce = torch::nn::functional::cross_entropy(
                      out.logits.reshape({-1, out.logits.size(-1)}), in.targets.reshape({-1}),
                      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                      .reshape(in.targets.sizes());
        const auto mask = tb.scored.size() == tb.segments.size() ? tb.scored[k] : in.target_valid;
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t p = 0; p < in.targets.size(1); ++p)
            if (mask[b][p].item<bool>()) {
              const double v = ce[b][p].item<double>();
              seg[k] += v;
              pos[static_cast<size_t>(p)] += v;
              seg_n[k] += 1;
              pos_n[static_cast<size_t>(p)] += 1;
            }
        mem = out.memory;
      }
    }
    REQUIRE(got.segment_sum.size() == 3);
    REQUIRE(got.position_sum.size() == L);
    double total = 0;
    for (size_t k = 0; k < 3; ++k) {
      CHECK(got.segment_sum[k] == doctest::Approx(seg[k]).epsilon(1e-5));
      CHECK(got.segment_count[k] == seg_n[k]);
      total += seg[k];
    }
    for (size_t p = 0; p < L; ++p) {
      CHECK(got.position_sum[p] == doctest::Approx(pos[p]).epsilon(1e-5));
      CHECK(got.position_count[p] == pos_n[p]);
      if (pos_n[p] > 0) CHECK(got.position_bits(p) == doctest::Approx(pos[p] / pos_n[p] / std::log(2.0)));
    }
    CHECK(total == doctest::Approx(s.loss_sum).epsilon(1e-5));
    double late = 0, late_n = 0;
    for (size_t p = 3; p < L; ++p) late += pos[p], late_n += pos_n[p];
    CHECK(got.bits_from_position(3) == doctest::Approx(late / late_n / std::log(2.0)));
  }
  // RMT's initial memory is learnt (not zeros): reset and zeroed are different ablations.
  PositionLosses r, z;
  evaluate_model(model, t.task(), Split::kValid, 2, 3, true, 0, 1, &z);
  evaluate_model(model, t.task(), Split::kValid, 2, 3, false, 0, 1, &r, true);
  CHECK(r.segment_sum[1] != doctest::Approx(z.segment_sum[1]).epsilon(1e-6));
  CHECK(std::isnan(r.position_bits(99)));
}
