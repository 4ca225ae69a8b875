// TrainingRun (core/train/training_run.h) without the command line: a tiny run reports its
// steps, evaluations and checkpoints to an observer as metrics.log and checkpoints/ record
// them, prints nothing, and a resume continues the step count to the same losses as an
// uninterrupted run.
#include "core/io/session.h"
#include "core/train/run_log.h"
#include "core/train/training_run.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <atomic>
#include <iostream>
#include <sstream>

using namespace mnemo;

namespace {

// Every report, in order; stops the run after `stop_after` steps when set.
struct RunRecorder : TrainingRunObserver {
  std::vector<int64_t> steps;
  std::vector<double> losses;
  std::vector<std::pair<int64_t, bool>> evals;  // step, memory zeroed
  std::vector<std::string> saves;  // "step why"
  std::vector<std::string> paths, notices;
  std::vector<int64_t> steps_saved;
  std::vector<EvalMetrics> finals;
  std::vector<CurriculumChange> curricula;
  std::atomic<bool>* stop = nullptr;
  int64_t stop_after = -1;
  void on_notice(const std::string& line) override { notices.push_back(line); }
  void on_step(const StepMetrics& m) override {
    steps.push_back(m.step);
    losses.push_back(m.loss);
    if (stop && m.step == stop_after) stop->store(true);
  }
  void on_eval(const EvalMetrics& e) override { evals.emplace_back(e.step, e.zero_memory); }
  void on_curriculum(const CurriculumChange& ch) override { curricula.push_back(ch); }
  void on_save(int64_t step, const std::string& path, SaveReason why) override {
    saves.push_back(std::to_string(step) + (why == SaveReason::kScheduled   ? " scheduled"
                                            : why == SaveReason::kRequested ? " requested"
                                                                            : " end"));
    steps_saved.push_back(step);
    paths.push_back(path);
  }
  void on_final_eval(const EvalMetrics& e) override { finals.push_back(e); }
};

TrainingConfig training_run_config(int64_t steps) {
  return TrainingConfig::from_json(test::tiny_copy_run({{"steps", steps}, {"batch", 4}, {"eval_every", 3},
                                                        {"eval_batches", 1}, {"save_every", 2}, {"save_at_eval", false},
                                                        {"save_every_seconds", 0}, {"record_every", 0}}));
}

// What the command does for a new run, from the set-up to the final evaluations.
TrainOutcome start_new_run(TrainingRun& run, const TrainingConfig& cfg, std::atomic<bool>* stop = nullptr) {
  run.build(cfg, torch::kCPU);
  run.set_process_group(nullptr);
  run.create_session("tiny.json");
  run.prepare();
  CHECK(run.start_hash_stats(0));
  TrainOutcome o = run.train(stop);
  run.leave_group();
  run.save_if_unsaved();
  return o;
}

std::vector<nlohmann::json> session_records(const std::string& dir) { return io::Session::open(dir).read_metrics(); }

}  // namespace

TEST_CASE("training run: a tiny run reports every step, evaluation and checkpoint it records, and prints nothing") {
  const std::string dir = test::temp_dir("trainrun") + "/s";
  RunRecorder obs;
  std::ostringstream printed;
  std::streambuf* old = std::cout.rdbuf(printed.rdbuf());
  TrainOutcome o;
  {
    TrainingRun run(dir, true, obs);
    o = start_new_run(run, training_run_config(7));
    run.final_evaluations();
  }
  std::cout.rdbuf(old);
  CHECK(printed.str().empty());
  CHECK(o.steps_done == 7);
  CHECK_FALSE(o.stopped);
  CHECK(obs.steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7});
  // eval_every 3 on a model with memory: each evaluation also with the memory zeroed.
  CHECK(obs.evals == std::vector<std::pair<int64_t, bool>>{{3, false}, {3, true}, {6, false}, {6, true}});
  // save_every 2, then the last step (7) at the end.
  CHECK(obs.saves == std::vector<std::string>{"2 scheduled", "4 scheduled", "6 scheduled", "7 end"});
  CHECK(obs.notices.empty());
  REQUIRE(obs.finals.size() == 4);  // valid, valid zeroed, test, test zeroed
  CHECK(obs.finals[0].split == Split::kValid);
  CHECK(obs.finals[3].split == Split::kTest);
  CHECK(obs.finals[3].zero_memory);
  // The files say the same: a step record per reported step with its loss, the evaluations,
  // the checkpoints (the newest three kept) and the manifest.
  const io::Session s = io::Session::open(dir);
  CHECK(s.manifest()["kind"] == "train");
  CHECK(s.manifest()["config_path"] == "tiny.json");
  CHECK(s.checkpoint_steps() == std::vector<int64_t>{4, 6, 7});
  for (size_t i = 1; i < obs.paths.size(); ++i) CHECK(obs.paths[i] == s.checkpoint_path(obs.steps_saved[i]));
  const RunLog log = parse_run_log(s.read_metrics());
  REQUIRE(log.steps.size() == 7);
  for (size_t i = 0; i < 7; ++i) {
    CHECK(log.steps[i]["step"] == obs.steps[i]);
    CHECK(log.steps[i]["loss"].get<double>() == doctest::Approx(obs.losses[i]).epsilon(1e-12));
  }
  CHECK(log.evals.size() == 4 + 4);  // 4 during training, 4 final
}

TEST_CASE("training run: a run stopped at step 3 and resumed continues the step count to the uninterrupted run's losses") {
  const std::string root = test::temp_dir("trainrun-resume");
  const TrainingConfig cfg = training_run_config(8);
  RunRecorder straight;
  {
    TrainingRun run(root + "/straight", true, straight);
    start_new_run(run, cfg);
  }
  // Stopped after step 3 (the stop flag, as Ctrl-C sets it): the end saves step 3.
  RunRecorder first;
  std::atomic<bool> stop{false};
  first.stop = &stop;
  first.stop_after = 3;
  {
    TrainingRun run(root + "/resumed", true, first);
    const TrainOutcome o = start_new_run(run, cfg, &stop);
    CHECK(o.stopped);
  }
  CHECK(first.steps == std::vector<int64_t>{1, 2, 3});
  CHECK(first.saves == std::vector<std::string>{"2 scheduled", "3 end"});
  RunRecorder second;
  {
    TrainingRun run(root + "/resumed", true, second);
    run.open_existing();
    REQUIRE(run.resume_point());
    CHECK(run.resume_point()->step == 3);
    run.build(cfg, torch::kCPU);
    run.restore_resume_point();
    CHECK(run.trainer().step() == 3);
    CHECK_FALSE(run.final_evaluations_missing());
    CHECK(run.repair_log().empty());
    run.append_resume_record();
    run.prepare();
    const TrainOutcome o = run.train();
    CHECK(o.steps_done == 5);
    CHECK_FALSE(run.save_if_unsaved());  // step 8 is a save_every step: saved, not twice
  }
  CHECK(second.steps == std::vector<int64_t>{4, 5, 6, 7, 8});
  REQUIRE(straight.losses.size() == 8);
  for (size_t i = 0; i < 3; ++i) CHECK(first.losses[i] == doctest::Approx(straight.losses[i]).epsilon(1e-9));
  for (size_t i = 0; i < 5; ++i) CHECK(second.losses[i] == doctest::Approx(straight.losses[3 + i]).epsilon(1e-9));
  // The resumed session's log: the resume record, then steps 4..8 after steps 1..3.
  const RunLog log = parse_run_log(session_records(root + "/resumed"));
  CHECK(log.resumes == 1);
  REQUIRE(log.steps.size() == 8);
  CHECK(log.steps.back()["step"] == 8);
  // Its steps done, the run has nothing more to train and its final evaluations are missing.
  RunRecorder third;
  TrainingRun again(root + "/resumed", true, third);
  again.open_existing();
  CHECK(again.resume_point()->step == 8);
  again.build(cfg, torch::kCPU);
  again.restore_resume_point();
  CHECK(again.final_evaluations_missing());
  again.final_evaluations();
  CHECK(third.finals.size() == 4);
  CHECK_FALSE(again.final_evaluations_missing());
}

TEST_CASE("training run: --hash-stats-every on a model without a hashed projection refuses and writes no hash_stats.csv") {
  const std::string dir = test::temp_dir("trainrun-hash") + "/s";
  RunRecorder obs;
  TrainingRun run(dir, true, obs);
  run.build(training_run_config(2), torch::kCPU);
  run.set_process_group(nullptr);
  run.create_session("tiny.json");
  run.prepare();
  CHECK_FALSE(run.start_hash_stats(1));
  const TrainOutcome o = run.train(nullptr);
  run.leave_group();
  run.save_if_unsaved();
  CHECK(o.steps_done == 2);
  CHECK_FALSE(test::file_exists(run.hash_stats_path()));
}
