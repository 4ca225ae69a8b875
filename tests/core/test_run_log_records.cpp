// The metrics.log writers of core/train/run_log.h: each record, appended to a session's
// metrics.log as `mnemoscope train` appends it, reads back through RunLog (parse_run_log, and
// the dashboard's RunLogFollower alike) to the values it was built from.
#include "core/io/session.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace mnemo;

namespace {

// Appends `records` to a new session's metrics.log and reads it back as the export does and
// as the dashboard follows it; the two readers must agree.
RunLog round_trip_records(const std::string& tag, const std::vector<nlohmann::json>& records) {
  const std::string dir = test::temp_dir(tag) + "/s";
  auto session = io::Session::create(dir, {{"kind", "test"}});
  for (const auto& r : records) session.append_metrics(r);
  RunLog log = parse_run_log(session.read_metrics());
  RunLogFollower follower(dir);
  follower.poll();
  const RunLog& followed = follower.log();
  CHECK(followed.steps == log.steps);
  CHECK(followed.evals == log.evals);
  CHECK(followed.probes == log.probes);
  CHECK(followed.errors == log.errors);
  CHECK(followed.curricula == log.curricula);
  CHECK(followed.resumes == log.resumes);
  CHECK(follower.problem().empty());
  return log;
}

// The curve of that name (a copy: `curves` is often a temporary).
Curve only_curve(const std::vector<Curve>& curves, const std::string& name) {
  for (const auto& c : curves)
    if (c.name == name) return c;
  FAIL("no curve named " << name);
  return {};
}

EvalMetrics an_eval(int64_t step, Split split, bool zero_memory, double loss, double accuracy) {
  EvalMetrics e;
  e.step = step;
  e.split = split;
  e.zero_memory = zero_memory;
  e.segments = 3;
  e.loss = loss;
  e.accuracy = accuracy;
  e.exact_match = accuracy / 2;
  e.bits_per_token = loss / std::log(2.0);
  e.perplexity = std::exp(loss);
  e.tokens = 120;
  e.examples = 8;
  e.chars = 96;
  return e;
}

}  // namespace

TEST_CASE("run log records: a step record reads back as the step's curves - NaN as NaN - a failed step under its own number") {
  StepMetrics m;
  m.step = 3;
  m.loss = 1.25;
  m.accuracy = 0.5;
  m.lr = 1e-3;
  m.grad_norm = 0.75;
  m.tokens_per_s = 1234.5;
  m.seconds = 0.25;
  StepMetrics bad = m;  // the 4th step's loss was NaN: no update, step() stays 3
  bad.loss = std::numeric_limits<double>::quiet_NaN();
  bad.grad_norm = std::numeric_limits<double>::infinity();
  bad.non_finite = true;
  const RunLog log = round_trip_records("rec-step", {step_record(m, 321.5), step_record(bad, 322)});
  REQUIRE(log.steps.size() == 2);
  CHECK(log.steps[1].value("non_finite", false));
  const Curve loss = only_curve(log.curves("loss"), "train");
  CHECK(loss.x == std::vector<double>{3, 4});
  CHECK(loss.y[0] == 1.25);
  CHECK(std::isnan(loss.y[1]));
  const Curve acc = only_curve(log.curves("accuracy"), "train");
  CHECK(acc.y[0] == 0.5);
  CHECK(log.curves("lr")[0].y == std::vector<double>{1e-3, 1e-3});
  const Curve grad = log.curves("grad-norm")[0];
  CHECK(grad.y[0] == 0.75);
  CHECK(std::isnan(grad.y[1]));  // Inf is written as null too
  CHECK(log.curves("tokens-per-s")[0].y[0] == 1234.5);
  CHECK(only_curve(log.curves("peak-memory"), "peak RSS (MiB)").y == std::vector<double>{321.5, 322});
  const DistributedStatus d = log.distributed_status();
  CHECK(d.world_size == 1);
  CHECK(d.step == 4);
  CHECK(d.rank_seconds.empty());
  CHECK(log.curves("rank-tokens-per-s").empty());
}

TEST_CASE("run log records: a distributed step record reads back as each rank's tokens/s and the allreduce share") {
  StepMetrics m;
  m.step = 7;
  m.loss = 0.5;
  m.seconds = 0.5;
  m.world_size = 2;
  m.rank_seconds = {0.4, 0.45};
  m.rank_tokens_per_s = {100, 80};
  m.allreduce_seconds = 0.1;
  const RunLog log = round_trip_records("rec-dist", {step_record(m, 100)});
  const DistributedStatus d = log.distributed_status();
  CHECK(d.world_size == 2);
  CHECK(d.step == 7);
  CHECK(d.rank_seconds == m.rank_seconds);
  CHECK(d.rank_tokens_per_s == m.rank_tokens_per_s);
  CHECK(d.slowest_rank == 1);
  CHECK(d.allreduce_share == doctest::Approx(0.2));
  const auto ranks = log.curves("rank-tokens-per-s");
  REQUIRE(ranks.size() == 2);
  CHECK(only_curve(ranks, "rank 1").y == std::vector<double>{80});
  CHECK(log.curves("allreduce-share")[0].y[0] == doctest::Approx(0.2));
}

TEST_CASE("run log records: eval records read back as the valid curves and final ones as the final results") {
  EvalMetrics valid = an_eval(2, Split::kValid, false, 0.5, 0.625);
  valid.extra["choice_accuracy"] = 0.75;  // a task's own metric is recorded by name
  const EvalMetrics zeroed = an_eval(2, Split::kValid, true, 0.875, 0.25);
  const EvalMetrics final_valid = an_eval(5, Split::kValid, false, 0.375, 0.75);
  const EvalMetrics final_zeroed = an_eval(5, Split::kValid, true, 0.75, 0.375);
  const EvalMetrics final_test = an_eval(5, Split::kTest, false, 0.25, 0.875);
  CHECK_FALSE(eval_record(valid).contains("world_size"));  // one process: not named
  const RunLog log = round_trip_records(
      "rec-eval", {eval_record(valid, 2), eval_record(zeroed, 2), final_eval_record(final_test, 2),
                   final_eval_record(final_zeroed, 2), final_eval_record(final_valid, 2)});
  REQUIRE(log.evals.size() == 5);
  CHECK(log.evals[0]["world_size"] == 2);
  CHECK(log.evals[0]["choice_accuracy"] == 0.75);
  CHECK(log.evals[0]["segments"] == 3);
  CHECK(log.evals[0]["exact_match"] == valid.exact_match);
  const auto loss = log.curves("loss");
  CHECK(only_curve(loss, "valid").x == std::vector<double>{2, 5});
  CHECK(only_curve(loss, "valid").y == std::vector<double>{0.5, 0.375});
  CHECK(only_curve(loss, kValidZeroMemoryCurve).y == std::vector<double>{0.875, 0.75});
  CHECK(only_curve(log.curves("accuracy"), "valid").y == std::vector<double>{0.625, 0.75});
  const std::vector<FinalEval> finals = log.final_results();
  REQUIRE(finals.size() == 3);  // valid, valid zeroed, test
  const EvalMetrics* written[] = {&final_valid, &final_zeroed, &final_test};
  for (size_t i = 0; i < 3; ++i) {
    const FinalEval& f = finals[i];
    const EvalMetrics& e = *written[i];
    CHECK(f.step == e.step);
    CHECK(f.split == split_name(e.split));
    CHECK(f.zero_memory == e.zero_memory);
    CHECK(f.loss == e.loss);
    CHECK(f.accuracy == e.accuracy);
    CHECK(f.bits_per_token == e.bits_per_token);
  }
}

TEST_CASE("run log records: a curriculum record reads back as a mark and the segments curve") {
  StepMetrics m;
  m.step = 6;
  CurriculumChange ch;
  ch.step = 4;
  ch.from = 2;
  ch.to = 3;
  ch.reason = "valid accuracy 0.9931 >= 0.99";
  const nlohmann::json rec = curriculum_record(ch, 2);
  CHECK(rec["segments"] == 3);
  CHECK(rec["world_size"] == 2);
  CHECK_FALSE(curriculum_record(ch).contains("world_size"));
  const RunLog log = round_trip_records("rec-curriculum", {rec, step_record(m, 1)});
  const auto marks = log.curriculum_marks();
  REQUIRE(marks.size() == 1);
  CHECK(marks[0].step == 4);
  CHECK(marks[0].from == 2);
  CHECK(marks[0].to == 3);
  CHECK(marks[0].reason == ch.reason);
  const Curve seg = log.curves("segments")[0];
  CHECK(seg.x == std::vector<double>{0, 4, 4, 6});
  CHECK(seg.y == std::vector<double>{2, 2, 3, 3});
}

TEST_CASE("run log records: a probe record reads back as the probe curves - the scored loss only when tokens were scored") {
  const nlohmann::json summary = {{"loss", 1.5},
                                  {"slot_types", {{"retain", 0.5}, {"mix", 0.25}, {"overwrite", 0.25}}},
                                  {"forget_norm", {{"min", 0.1}, {"p10", 0.2}, {"p50", 0.3}, {"p90", 0.4}, {"max", 0.5}}},
                                  {"rmt_block_mass", {{"0", {0.5, 0.25, 0.25}}}},
                                  {"hash_entropy", {{"blocks.0.ff", {0.9, 0.8}}}}};
  const nlohmann::json scored = probe_record(4, summary, 0.75, 12);
  const nlohmann::json unscored = probe_record(8, summary, std::numeric_limits<double>::quiet_NaN(), 0);
  CHECK_FALSE(unscored.contains("scored_loss"));
  CHECK_FALSE(unscored.contains("scored_tokens"));
  const RunLog log = round_trip_records("rec-probe", {scored, unscored});
  REQUIRE(log.probes.size() == 2);
  CHECK(log.probes[0]["scored_tokens"] == 12);
  const auto probe = log.curves("probe-loss");
  CHECK(only_curve(probe, "probe loss").x == std::vector<double>{4, 8});
  CHECK(only_curve(probe, "probe loss").y == std::vector<double>{1.5, 1.5});
  CHECK(only_curve(probe, "probe loss, scored tokens").x == std::vector<double>{4});
  CHECK(only_curve(probe, "probe loss, scored tokens").y == std::vector<double>{0.75});
  CHECK(only_curve(log.curves("slot-types"), "mix").y == std::vector<double>{0.25, 0.25});
  CHECK(only_curve(log.curves("forget-norm"), "p90").y == std::vector<double>{0.4, 0.4});
  CHECK(only_curve(log.curves("block-mass"), "layer 0 writing").y == std::vector<double>{0.25, 0.25});
  CHECK(only_curve(log.curves("hash-entropy"), "blocks.0.ff table 1").y == std::vector<double>{0.8, 0.8});
}

TEST_CASE("run log records: a resume record drops what a crash lost - an error record names its step and message") {
  std::vector<nlohmann::json> recs;
  for (int64_t s = 1; s <= 3; ++s) {
    StepMetrics m;
    m.step = s;
    m.loss = 1.0 / static_cast<double>(s);
    recs.push_back(step_record(m, 1));
  }
  recs.push_back(final_eval_record(an_eval(2, Split::kValid, false, 0.5, 0.5)));
  const nlohmann::json resume = resume_record(2, "/runs/s/checkpoints/step-2.safetensors", 2);
  CHECK(resume["checkpoint"] == "/runs/s/checkpoints/step-2.safetensors");
  CHECK(resume["world_size"] == 2);
  CHECK(resume_record(0, "", 1)["world_size"] == 1);  // always named
  recs.push_back(resume);
  recs.push_back(error_record(3, "loss is NaN at step 3; the last finite weights are kept", 2));
  const RunLog log = round_trip_records("rec-resume", recs);
  CHECK(log.resumes == 1);
  CHECK(log.steps.size() == 2);   // step 3 was lost
  CHECK(log.evals.empty());       // the final evaluations of the resume's step are superseded
  REQUIRE(log.errors.size() == 1);
  CHECK(log.errors[0]["step"] == 3);
  CHECK(log.errors[0]["message"] == "loss is NaN at step 3; the last finite weights are kept");
  CHECK(log.errors[0]["world_size"] == 2);
  CHECK_FALSE(error_record(3, "x").contains("world_size"));
  CHECK(log.last_step() == 3);
}
