// MTN QA answers in the app (docs/gui.md#mtn-qa): the app steps an mtn-qa model with the
// answer-tagging head it was trained with, and the MTN memory panel's answers section ranks the
// question's cities by the mean P(answer) of their bytes — equal to `mtn-qa`'s / eval's own
// computation (the QA task's forward pass, tests/support/qa_forward.h, and qa_pick_candidate).
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#include "app/figures/qa.h"
#include "core/data/qa_task.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"
#include "core/train/train_config.h"
#include "tests/support/qa_forward.h"
#include "tests/support/skip.h"

#include <fstream>

using namespace mnemo;
using namespace mnemo::app;

TEST_CASE("qa answers: the question's cities with the mean P(answer) of their bytes, ranked - none without a question") {
  const std::string text = "ann lives in rome.  where does ann live? oslo rome";
  const Document doc = make_document(text, "qa");
  StepData st;
  st.first_token = 20;
  st.length = static_cast<int64_t>(text.size()) - 20;
  CHECK_FALSE(qa_answers(st, doc).question);  // no answer probabilities: not a tagging model
  for (int64_t j = 0; j < st.length; ++j) st.mtn.qa_answer_prob.push_back(0.01f * static_cast<float>(j % 7));
  const QaAnswers a = qa_answers(st, doc);
  REQUIRE(a.question);
  CHECK(a.name == "ann");
  REQUIRE(a.candidates.size() == 2);
  double total = 0;
  for (size_t c = 0; c < 2; ++c) {
    const QaCandidate& k = a.candidates[c];
    CHECK(k.text == (c == 0 ? "oslo" : "rome"));
    CHECK(std::string(doc.bytes.substr(static_cast<size_t>(k.first), static_cast<size_t>(k.end - k.first))) == k.text);
    double sum = 0;
    for (int64_t t = k.first; t < k.end; ++t) sum += 0.01 * static_cast<double>((t - 20) % 7);
    CHECK(k.mean_prob == doctest::Approx(sum / 4.0).epsilon(1e-6));
    total += k.mean_prob;
  }
  CHECK(a.candidates[0].share == doctest::Approx(a.candidates[0].mean_prob / total));
  const size_t hi = a.candidates[0].mean_prob >= a.candidates[1].mean_prob ? 0 : 1;
  CHECK(a.picked == static_cast<int64_t>(hi));
  CHECK(a.ranked == std::vector<size_t>{hi, 1 - hi});
  // The reading chunk holds no question: nothing to rank.
  StepData reading = st;
  reading.first_token = 0;
  reading.length = 20;
  CHECK_FALSE(qa_answers(reading, doc).question);
}

#ifdef MNEMO_WITH_GUI
TEST_CASE("qa answers in the app: mtn-qa stepped with its tagging head - each city's mean P(answer) and the pick equal "
          "the qa task's forward pass - the shipped example is test example 0") {
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/mtn-qa.safetensors";
  if (!test::file_exists(zoo)) MNEMO_SKIP("no zoo model " + zoo);
  const WeightsFile wf = read_weights_file(zoo);
  const TrainingConfig tc = TrainingConfig::from_json(wf.training_config);
  auto qa = std::dynamic_pointer_cast<QaTaskSource>(tc.make_task());
  REQUIRE(qa);
  MemoryModel model = make_model(tc.model, tc.train.seed);
  load_weights(*model, wf.weights, zoo);
  model->set_task_head(qa->head());
  model->eval();
  const QaTask& task = qa->qa();
  // The example the docs step (assets/qa/mtn-qa-test-0.txt) is the task's test example 0.
  CHECK(test::read_file(std::string(MNEMO_SOURCE_DIR) + "/assets/qa/mtn-qa-test-0.txt") ==
        qa_stream(task.example(QaSplit::kTest, 0), task.options()));
  const std::string dir = test::temp_dir("qa-answers");
  for (int64_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const QaExample ex = task.example(QaSplit::kTest, i);
    const std::string path = dir + "/ex" + std::to_string(i) + ".txt";
    std::ofstream(path) << qa_stream(ex, task.options());
    Worker w;
    w.start(path, ModelConfig{}, 0, zoo);
    for (int64_t c = 0; c < task.options().doc_chunks + 1; ++c) w.step(+1);
    test::wait_worker(w, 2 + task.options().doc_chunks);
    CHECK(w.take_errors().empty());
    ViewPtr v = w.latest();
    REQUIRE(v->step);
    REQUIRE(v->position == task.options().doc_chunks);  // the query chunk
    const StepData& st = *v->step;
    CHECK(std::isnan(st.loss));  // a tagger: no language-model loss
    REQUIRE(st.mtn.qa_answer_prob.size() == ex.query.size());
    const QaAnswers a = qa_answers(st, *v->info->doc);
    REQUIRE(a.question);
    CHECK(a.name == ex.name);
    // Independently: the QA task's reading-then-query forward pass of the same weights.
    torch::Tensor p;
    {
      torch::NoGradGuard g;
      p = test::qa_forward(*model, task.batch({ex})).answer_prob[0].to(torch::kFloat64);
    }
    REQUIRE(a.candidates.size() == ex.candidates.size());
    for (size_t c = 0; c < ex.candidates.size(); ++c) {
      const auto [b, e] = ex.candidates[c];
      CHECK(a.candidates[c].text == ex.query.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
      CHECK(a.candidates[c].mean_prob == doctest::Approx(p.narrow(0, b, e - b).mean().item<double>()).epsilon(1e-5));
    }
    CHECK(a.picked == qa_pick_candidate(p, ex));
  }
}
#endif
