// The Memformer family's part of a step's StepData (app/figures/step_data.h): the writer's
// attention over the segment, the memory read, the forget norms and the memory slots after
// the step. Filled by the family's extractor (extract_memformer_step); plain arrays, no LibTorch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct MemformerData {
  // Any of the family's keys (memformer.*) was traced: the fields below are what it read.
  bool present = false;

  // Writer attention: blocks of slots x cols, block 0 = mean over heads, block 1 + h = head h.
  // cols = 1 (self) + length (real tokens) + n_cls; empty when the model has no writer.
  int slots = 0, heads = 0, cols = 0, n_cls = 0;
  std::vector<float> writer;
  std::vector<std::string> col_labels;  // "self", token labels, "<cls>"
  float writer_max = 0.f;               // max over every block (for a shared colour scale)
  std::vector<float> block_min, block_max;  // finite min / max of each block (heads + 1)
  std::vector<float> self_mass;         // [slots], mean over heads (column 0)

  std::vector<float> forget_norm;       // [slots] ||v_bias||, empty when not traced

  // The memory read: each token's cross-attention over the slots (as they were before the
  // step) in the last traced encoder layer, mean over heads, [length x slots]; empty when not
  // traced. read_layer: that layer (app/figures/memory_reads.h).
  std::vector<float> read;
  int read_layer = -1;
  // With model.memory_gate: tanh(read_gate) of each encoder layer (memformer.read_gate), the
  // factor each layer's read enters with; empty for ungated models.
  std::vector<float> read_gate;
  // What each token this step predicts (the next segment, document tokens
  // (segment + 1) * segment_len + j) drew from the same slots through the encoder
  // (memformer.decoder_read, [decoder_rows() x slots], rows sum to 1); empty when not traced.
  std::vector<float> decoder_read;
  int64_t decoder_rows() const { return slots > 0 ? static_cast<int64_t>(decoder_read.size()) / slots : 0; }

  int dim = 0;
  std::vector<float> memory;            // [slots x dim] after the step, empty when not traced
  float memory_absmax = 0.f;
  std::vector<float> slot_norm;         // [slots] ||m_i|| after the step
  std::vector<float> cos_prev;          // [slots] cos(m_i before, m_i after); NaN for a zero slot

  bool has_writer() const { return cols > 0 && slots > 0 && !writer.empty(); }
  // The slots x cols block of `head` (-1 = mean); null without a writer.
  const float* writer_block(int head) const {
    if (!has_writer()) return nullptr;
    const int b = head < 0 || head >= heads ? 0 : head + 1;
    return writer.data() + static_cast<size_t>(b) * static_cast<size_t>(slots) * static_cast<size_t>(cols);
  }
};

}  // namespace mnemo::app
