// Byte-level tokenizer: one token per byte (ids 0..255) plus special tokens, so any file,
// UTF-8 or not, can be tokenized and every token maps back to its exact byte range.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo {

struct ByteTokenizer {
  static constexpr int64_t kPad = 256;   // padding of the last segment (masked everywhere)
  static constexpr int64_t kBos = 257;   // start of a decoder input
  static constexpr int64_t kEos = 258;
  static constexpr int64_t kCls = 259;   // classification tokens (Memformer encoder)
  static constexpr int64_t kSep = 260;
  static constexpr int64_t kMem = 261;   // memory placeholder (RMT / naive-memory baselines)
  static constexpr int64_t kVocabSize = 262;

  // Token ids of `bytes`: id = byte value. offsets[i] = {begin, end} byte range of token i.
  static std::vector<int64_t> encode(std::string_view bytes, std::vector<std::pair<int64_t, int64_t>>* offsets = nullptr);
  // Bytes of `ids`; special tokens are skipped.
  static std::string decode(const std::vector<int64_t>& ids);
  static bool is_special(int64_t id) { return id >= 256; }
  // Human-readable name of a special token ("<pad>"), or "" for a byte.
  static const char* special_name(int64_t id);
};

}  // namespace mnemo
