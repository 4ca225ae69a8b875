// Document: a file's bytes, its token ids and each token's byte range.
#pragma once
#include "core/errors.h"
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

// A user-facing problem with an input file; the message names the file and the fix.
struct DocumentError : InputError {
  using InputError::InputError;
};

// A document in O(1) memory per byte beyond the bytes themselves: the byte-level tokenizer
// (core/data/tokenizer.h) gives one token per byte, token t = byte t, so token ids and byte
// ranges are computed when asked for, never stored; segments are built on demand
// (core/data/segmenter.h). See docs/reliability.md for the measured figures.
struct Document {
  std::string path;    // "" for in-memory documents
  std::string bytes;   // the raw file content (any encoding)

  int64_t size() const { return static_cast<int64_t>(bytes.size()); }  // tokens
  // Token t's id (its byte value, 0..255). t must be in 0..size()-1.
  int64_t id(int64_t t) const { return static_cast<unsigned char>(bytes[static_cast<size_t>(t)]); }
  // Token t's byte range [begin, end).
  std::pair<int64_t, int64_t> offset(int64_t t) const { return {t, t + 1}; }
  // The ids of tokens [begin, end) (end < 0: to the end), materialised.
  std::vector<int64_t> ids(int64_t begin = 0, int64_t end = -1) const;
  // True when the bytes contain NUL or are not valid UTF-8 (the UI escapes such bytes).
  bool looks_binary() const;
};

// The largest document load_document reads (docs/reliability.md#caps): a bigger file is
// refused before a byte of it is read, with a message naming the limit.
inline constexpr int64_t kMaxDocumentBytes = int64_t{256} << 20;  // 256 MiB

// Segmentation arithmetic (core/data/segmenter.h builds the tensors): how many segments of
// `segment_len` tokens `tokens` make, and the first token and real length of segment i.
// segment_len >= 1, tokens >= 0, 0 <= i < segment_count(...).
inline int64_t segment_count(int64_t tokens, int64_t segment_len) {
  return tokens / segment_len + (tokens % segment_len != 0);
}
inline std::pair<int64_t, int64_t> segment_tokens(int64_t tokens, int64_t segment_len, int64_t i) {
  const int64_t first = i * segment_len;
  return {first, std::min(segment_len, tokens - first)};
}

// Reads a file. Throws DocumentError for a missing path, a directory, an unreadable, empty
// or oversized (> kMaxDocumentBytes) file. Binary files are allowed.
Document load_document(const std::string& path);
Document make_document(std::string bytes, std::string path = "");

}  // namespace mnemo
