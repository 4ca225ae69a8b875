#include "core/train/metrics.h"

namespace mnemo {

void ScoreTotals::add(const ScoreTotals& o) {
  for (const auto& [k, v] : o.extra) {
    auto& e = extra[k];
    e.first += v.first;
    e.second += v.second;
  }
  chars += o.chars;
  correct += o.correct;
  examples += o.examples;
  exact += o.exact;
  loss_sum += o.loss_sum;
  loss_count += o.loss_count;
}

ScoreTotals score_predictions(const std::vector<torch::Tensor>& predictions, const std::vector<torch::Tensor>& targets,
                              const std::vector<torch::Tensor>& scored) {
  TORCH_CHECK(predictions.size() == targets.size() && targets.size() == scored.size() && !targets.empty(),
              "score_predictions: one prediction, target and mask per segment");
  const int64_t b = targets[0].size(0);
  auto wrong = torch::zeros({b}, torch::kInt64);
  ScoreTotals s;
  for (size_t t = 0; t < targets.size(); ++t) {
    auto mask = scored[t].to(torch::kCPU);
    auto hit = predictions[t].to(torch::kCPU).eq(targets[t].to(torch::kCPU)) & mask;
    auto miss = mask & hit.logical_not();
    s.chars += mask.sum().item<double>();
    s.correct += hit.sum().item<double>();
    wrong += miss.sum(1);
  }
  s.examples = b;
  s.exact = wrong.eq(0).sum().item<int64_t>();
  return s;
}

}  // namespace mnemo
