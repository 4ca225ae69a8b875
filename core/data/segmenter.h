// Segmenter: splits a document's tokens into segments of L tokens. Every token lies in
// exactly one segment; the last segment is padded with <pad> and its padding is masked.
#pragma once
#include "core/data/document.h"

#include <torch/torch.h>

namespace mnemo {

struct Segment {
  int64_t index = 0;        // segment number
  int64_t first_token = 0;  // index in the document of the segment's first token
  int64_t length = 0;       // real (unpadded) tokens, 1..L
  torch::Tensor tokens;     // [1, L] int64, padded with ByteTokenizer::kPad
  torch::Tensor valid;      // [1, L] bool, false on padding
  torch::Tensor offsets;    // [1, L, 2] int64 byte ranges, {-1, -1} on padding
};

inline constexpr int64_t kMaxSegmentLen = 65536;

class Segmenter {
 public:
  // Throws std::invalid_argument when segment_len is outside 1..kMaxSegmentLen.
  Segmenter(const Document* doc, int64_t segment_len);
  int64_t num_segments() const;
  int64_t segment_len() const { return len_; }
  // Throws std::out_of_range for i outside 0..num_segments()-1.
  Segment segment(int64_t i) const;

 private:
  const Document* doc_;
  int64_t len_;
};

}  // namespace mnemo
