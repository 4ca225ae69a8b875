// The QA answers of a step of a model that tags answer bytes (mtn-qa; the QA task of
// core/data/qa_task.h): when the step's segment holds the task's question "where does <name>
// live? <city> <city> ...", each listed city with the mean P(answer) over its bytes — the
// number `mtn-qa` and eval's choice_accuracy pick the answer by (qa_pick_candidate) — and its
// share of the candidates' sum. Plain C++: read from StepData::mtn.qa_answer_prob.
#pragma once
#include "app/figures/step_data.h"
#include "core/data/document.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct QaCandidate {
  std::string text;          // the city as written
  int64_t first = 0, end = 0;  // its document tokens [first, end)
  double mean_prob = 0.0;    // mean P(answer) over its bytes
  double share = 0.0;        // mean_prob / the sum over the candidates (0 when that sum is 0)
};

struct QaAnswers {
  bool question = false;  // the segment holds "where does <name> live?" followed by candidates
  std::string name;       // the asked name
  std::vector<QaCandidate> candidates;  // in the order the question lists them
  std::vector<size_t> ranked;           // candidate indices by decreasing mean_prob (ties: listed first)
  int64_t picked = -1;                  // ranked[0]: the model's answer (-1 when no question)
};

// Empty (question false) when the step has no answer probabilities (st.mtn.qa_answer_prob) or its
// segment holds no question with at least one candidate. The question is the last
// "where does " in the segment; candidates are the space-separated words after " live?" up to
// the segment's end or a newline.
QaAnswers qa_answers(const StepData& st, const Document& doc);

}  // namespace mnemo::app
