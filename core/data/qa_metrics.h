// The Memory Transformer Network paper's QA metrics (Memory Transformer Networks (docs/references.md#mtn)
// §3.2), over the tokens of the inference phase:
//   recall (tpr) = mean predicted P(answer) over answer tokens
//   fpr          = mean predicted P(answer) over not-answer tokens
//   precision    = tpr / (tpr + r * fpr), r = #not-answer / #answer tokens
//   pseudo precision = the same with r = 1 (the weighted loss treats the classes as if
//                  they were equally frequent)
//   pseudo F1    = 2 * P * R / (P + R) with P = pseudo precision, R = recall
// Undefined values are NaN: recall with no answer token, fpr with no other token. A
// precision of 0/0 (tpr = fpr = 0) is 0, and F1 is 0 when P + R = 0.
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace mnemo {

// Sums over any number of batches.
struct QaCounts {
  double answer_prob_sum = 0;  // sum of P(answer) over answer tokens
  double other_prob_sum = 0;   // sum of P(answer) over not-answer tokens
  int64_t answers = 0, others = 0;

  // probs [..] float, labels [..] 0/1, valid [..] bool (same shape); only valid tokens count.
  void add(const torch::Tensor& probs, const torch::Tensor& labels, const torch::Tensor& valid);
  void add(const QaCounts& other);
};

struct QaMetrics {
  double recall = 0, false_positive_rate = 0, pseudo_precision = 0, pseudo_f1 = 0;
  int64_t answers = 0, others = 0;
};

// tpr / (tpr + r * fpr); 0 when the denominator is 0; NaN if an input is NaN.
double qa_precision(double tpr, double fpr, double r = 1.0);
// 2 p r / (p + r); 0 when p + r = 0; NaN if an input is NaN.
double qa_f1(double precision, double recall);
QaMetrics qa_metrics(const QaCounts& c);

}  // namespace mnemo
