#include "app/figures/qa.h"

#include "core/data/qa_words.h"

#include <algorithm>
#include <numeric>

namespace mnemo::app {

QaAnswers qa_answers(const StepData& st, const Document& doc) {
  QaAnswers a;
  const int64_t n = std::min<int64_t>(st.length, static_cast<int64_t>(st.mtn.qa_answer_prob.size()));
  if (n <= 0 || st.first_token < 0 || st.first_token + n > doc.size()) return a;
  // Tokens are bytes (ByteTokenizer): token first_token + j is byte j of the segment's text.
  const std::string text(doc.bytes.substr(static_cast<size_t>(doc.offset(st.first_token).first), static_cast<size_t>(n)));
  const size_t head = text.rfind(qa::kQuestionHead);
  if (head == std::string::npos) return a;
  const size_t name_at = head + std::char_traits<char>::length(qa::kQuestionHead);
  const size_t tail = text.find(qa::kQuestionTail, name_at);
  if (tail == std::string::npos || tail == name_at) return a;
  const std::string name = text.substr(name_at, tail - name_at);
  if (name.find_first_of(" \n") != std::string::npos) return a;
  size_t i = tail + std::char_traits<char>::length(qa::kQuestionTail);
  const size_t stop = std::min(text.size(), text.find('\n', i));
  while (i < stop) {
    while (i < stop && text[i] == ' ') ++i;
    size_t e = i;
    while (e < stop && text[e] != ' ') ++e;
    if (e == i) break;
    QaCandidate c;
    c.text = text.substr(i, e - i);
    c.first = st.first_token + static_cast<int64_t>(i);
    c.end = st.first_token + static_cast<int64_t>(e);
    double sum = 0.0;
    for (size_t k = i; k < e; ++k) sum += st.mtn.qa_answer_prob[k];
    c.mean_prob = sum / static_cast<double>(e - i);
    a.candidates.push_back(std::move(c));
    i = e;
  }
  if (a.candidates.empty()) return a;
  a.question = true;
  a.name = name;
  double total = 0.0;
  for (const auto& c : a.candidates) total += c.mean_prob;
  for (auto& c : a.candidates) c.share = total > 0.0 ? c.mean_prob / total : 0.0;
  a.ranked.resize(a.candidates.size());
  std::iota(a.ranked.begin(), a.ranked.end(), size_t{0});
  std::stable_sort(a.ranked.begin(), a.ranked.end(),
                   [&](size_t x, size_t y) { return a.candidates[x].mean_prob > a.candidates[y].mean_prob; });
  a.picked = static_cast<int64_t>(a.ranked[0]);
  return a;
}

}  // namespace mnemo::app
