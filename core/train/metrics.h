// Metrics of sequence tasks: per-character accuracy and exact match over scored positions
// (teacher forcing: position g is correct when argmax of its logits equals its target).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

struct ScoreTotals {
  double chars = 0, correct = 0;   // scored positions, correctly predicted ones
  int64_t examples = 0, exact = 0;  // examples, examples with every scored position correct
  double loss_sum = 0, loss_count = 0;
  // A task's own metric sums (TaskSource::accumulate_metrics): name -> (sum, count).
  std::map<std::string, std::pair<double, double>> extra;

  double accuracy() const { return chars > 0 ? correct / chars : 0.0; }
  double exact_match() const { return examples > 0 ? static_cast<double>(exact) / static_cast<double>(examples) : 0.0; }
  double loss() const { return loss_count > 0 ? loss_sum / loss_count : 0.0; }
  void add(const ScoreTotals& o);
};

// Scores one batch: predictions[t] [B, Ls] int64 (argmax per position), targets[t] [B, Ls],
// scored[t] [B, Ls] bool, one entry per segment.
ScoreTotals score_predictions(const std::vector<torch::Tensor>& predictions, const std::vector<torch::Tensor>& targets,
                              const std::vector<torch::Tensor>& scored);

}  // namespace mnemo
