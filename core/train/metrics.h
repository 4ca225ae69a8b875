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

// Loss of the scored positions by segment index and by position within the segment (nats
// sums and counts): value j of segment t's loss is position j (docs/formats.md lm.loss: for
// RMT/Tr-XL the prediction of token tL+j+1 from the segment's first j+1 tokens and the
// memory; for Memformer the prediction of token (t+1)L+j). Where the memory helps on text:
// a memory that only bridges the segment boundary helps the first positions; a memory
// that keeps earlier words helps later positions too.
struct PositionLosses {
  std::vector<double> segment_sum, segment_count;    // [segments]
  std::vector<double> position_sum, position_count;  // [segment length]
  // token_loss [B, L] nats (0 where not scored), mask [B, L] bool: the scored positions.
  void add(int64_t segment, const torch::Tensor& token_loss, const torch::Tensor& mask);
  void add(const PositionLosses& o);
  // Bits per token of segment t / of position j (NaN when nothing was scored there).
  double segment_bits(size_t t) const;
  double position_bits(size_t j) const;
  // Bits per token over positions first..end of every segment.
  double bits_from_position(size_t first) const;
};

}  // namespace mnemo
