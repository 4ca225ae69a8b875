#include "core/data/qa_metrics.h"

#include <cmath>
#include <limits>

namespace mnemo {

void QaCounts::add(const torch::Tensor& probs, const torch::Tensor& labels, const torch::Tensor& valid) {
  TORCH_CHECK(probs.sizes() == labels.sizes() && probs.sizes() == valid.sizes(),
              "qa counts: probs, labels and valid must have the same shape");
  auto p = probs.detach().to(torch::kCPU, torch::kFloat64);
  auto v = valid.to(torch::kCPU, torch::kBool);
  auto pos = labels.to(torch::kCPU).eq(1).logical_and(v);
  auto neg = labels.to(torch::kCPU).ne(1).logical_and(v);
  answer_prob_sum += p.masked_select(pos).sum().item<double>();
  other_prob_sum += p.masked_select(neg).sum().item<double>();
  answers += pos.sum().item<int64_t>();
  others += neg.sum().item<int64_t>();
}

void QaCounts::add(const QaCounts& o) {
  answer_prob_sum += o.answer_prob_sum;
  other_prob_sum += o.other_prob_sum;
  answers += o.answers;
  others += o.others;
}

double qa_precision(double tpr, double fpr, double r) {
  if (std::isnan(tpr) || std::isnan(fpr) || std::isnan(r)) return std::numeric_limits<double>::quiet_NaN();
  const double den = tpr + r * fpr;
  return den == 0.0 ? 0.0 : tpr / den;
}

double qa_f1(double precision, double recall) {
  if (std::isnan(precision) || std::isnan(recall)) return std::numeric_limits<double>::quiet_NaN();
  const double den = precision + recall;
  return den == 0.0 ? 0.0 : 2.0 * precision * recall / den;
}

QaMetrics qa_metrics(const QaCounts& c) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  QaMetrics m;
  m.answers = c.answers;
  m.others = c.others;
  m.recall = c.answers > 0 ? c.answer_prob_sum / static_cast<double>(c.answers) : kNan;
  m.false_positive_rate = c.others > 0 ? c.other_prob_sum / static_cast<double>(c.others) : kNan;
  m.pseudo_precision = qa_precision(m.recall, m.false_positive_rate, 1.0);
  m.pseudo_f1 = qa_f1(m.pseudo_precision, m.recall);
  return m;
}

}  // namespace mnemo
