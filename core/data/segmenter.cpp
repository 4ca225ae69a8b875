#include "core/data/segmenter.h"

#include "core/data/tokenizer.h"

#include <stdexcept>
#include <string>
#include <tuple>

namespace mnemo {

Segmenter::Segmenter(const Document* doc, int64_t segment_len) : doc_(doc), len_(segment_len) {
  if (!doc_) throw std::invalid_argument("segmenter: no document");
  if (segment_len < 1 || segment_len > kMaxSegmentLen)
    throw std::invalid_argument("segment length must be in 1..65536, got " + std::to_string(segment_len));
}

int64_t Segmenter::num_segments() const { return segment_count(doc_->size(), len_); }

Segment Segmenter::segment(int64_t i) const {
  if (i < 0 || i >= num_segments())
    throw std::out_of_range("segment " + std::to_string(i) + " is out of range 0.." + std::to_string(num_segments() - 1));
  Segment s;
  s.index = i;
  std::tie(s.first_token, s.length) = segment_tokens(doc_->size(), len_, i);
  s.tokens = torch::full({1, len_}, ByteTokenizer::kPad, torch::kInt64);
  s.valid = torch::zeros({1, len_}, torch::kBool);
  s.offsets = torch::full({1, len_, 2}, -1, torch::kInt64);
  auto tok = s.tokens.accessor<int64_t, 2>();
  auto val = s.valid.accessor<bool, 2>();
  auto off = s.offsets.accessor<int64_t, 3>();
  for (int64_t j = 0; j < s.length; ++j) {
    const int64_t t = s.first_token + j;
    const auto [b, e] = doc_->offset(t);
    tok[0][j] = doc_->id(t);
    val[0][j] = true;
    off[0][j][0] = b;
    off[0][j][1] = e;
  }
  return s;
}

}  // namespace mnemo
