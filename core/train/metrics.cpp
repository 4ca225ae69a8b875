#include "core/train/metrics.h"

#include <cmath>
#include <limits>

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

namespace {
void grow(std::vector<double>& v, size_t n) {
  if (v.size() < n) v.resize(n, 0.0);
}
double bits_of(double sum, double count) {
  return count > 0 ? sum / count / std::log(2.0) : std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

void PositionLosses::add(int64_t segment, const torch::Tensor& token_loss, const torch::Tensor& mask) {
  TORCH_CHECK(segment >= 0 && token_loss.dim() == 2 && token_loss.sizes() == mask.sizes(),
              "PositionLosses::add: token_loss and mask [B, L] of one segment");
  const auto m = mask.to(torch::kCPU).to(torch::kDouble);
  const auto l = token_loss.detach().to(torch::kCPU).to(torch::kDouble) * m;
  const auto per_pos = l.sum(0).contiguous(), per_count = m.sum(0).contiguous();
  const auto len = static_cast<size_t>(per_pos.size(0));
  grow(position_sum, len);
  grow(position_count, len);
  grow(segment_sum, static_cast<size_t>(segment) + 1);
  grow(segment_count, static_cast<size_t>(segment) + 1);
  const double* ps = per_pos.data_ptr<double>();
  const double* pc = per_count.data_ptr<double>();
  for (size_t j = 0; j < len; ++j) {
    position_sum[j] += ps[j];
    position_count[j] += pc[j];
    segment_sum[static_cast<size_t>(segment)] += ps[j];
    segment_count[static_cast<size_t>(segment)] += pc[j];
  }
}

void PositionLosses::add(const PositionLosses& o) {
  auto sum_into = [](std::vector<double>& a, const std::vector<double>& b) {
    grow(a, b.size());
    for (size_t i = 0; i < b.size(); ++i) a[i] += b[i];
  };
  sum_into(segment_sum, o.segment_sum);
  sum_into(segment_count, o.segment_count);
  sum_into(position_sum, o.position_sum);
  sum_into(position_count, o.position_count);
}

double PositionLosses::segment_bits(size_t t) const {
  return t < segment_sum.size() ? bits_of(segment_sum[t], segment_count[t]) : bits_of(0, 0);
}
double PositionLosses::position_bits(size_t j) const {
  return j < position_sum.size() ? bits_of(position_sum[j], position_count[j]) : bits_of(0, 0);
}
double PositionLosses::bits_from_position(size_t first) const {
  double s = 0, c = 0;
  for (size_t j = first; j < position_sum.size(); ++j) {
    s += position_sum[j];
    c += position_count[j];
  }
  return bits_of(s, c);
}

}  // namespace mnemo
