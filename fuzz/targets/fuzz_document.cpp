// Document loading and segmentation (core/data/document.h) on any file: the input is
// written to a file and loaded like `--doc`; its first byte picks a segment length. Every
// token maps back to its byte, and the segments tile the document.
#include "core/data/document.h"
#include "core/data/tokenizer.h"
#include "fuzz/targets/common.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mnemo-fuzz-doc-" + std::to_string(::getpid());
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  mnemo::Document d;
  try {
    d = mnemo::load_document(path);
  } catch (const mnemo::DocumentError&) {
    FUZZ_REQUIRE(size == 0);
    return 0;
  }
  FUZZ_REQUIRE(d.size() == static_cast<int64_t>(size));
  (void)d.looks_binary();
  const auto ids = d.ids();
  std::vector<std::pair<int64_t, int64_t>> off;
  FUZZ_REQUIRE(ids == mnemo::ByteTokenizer::encode(d.bytes, &off));
  for (int64_t t = 0; t < d.size(); ++t) FUZZ_REQUIRE(d.offset(t) == off[static_cast<size_t>(t)]);
  FUZZ_REQUIRE(mnemo::ByteTokenizer::decode(ids) == d.bytes);
  const int64_t len = 1 + data[0] % 97;
  const int64_t n = mnemo::segment_count(d.size(), len);
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto [first, length] = mnemo::segment_tokens(d.size(), len, i);
    FUZZ_REQUIRE(first == next && length >= 1 && length <= len);
    next = first + length;
  }
  FUZZ_REQUIRE(next == d.size());
  return 0;
}
