// The framed-log reader (core/io/framed_log.h) on any bytes: records, gaps and the tail
// tile the input in order, and every record read is a whole frame whose checksums hold.
#include "core/io/framed_log.h"
#include "fuzz/targets/common.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto r = mnemo::io::parse_framed_log(bytes, 0);
  FUZZ_REQUIRE(r.records.size() == r.offsets.size());
  FUZZ_REQUIRE(r.good_bytes <= size && r.file_bytes == size);
  FUZZ_REQUIRE(r.clean == (r.gaps.empty() && r.stop_reason.empty()));
  FUZZ_REQUIRE(r.stop_reason.empty() == (r.good_bytes == size));
  // Walk the file: record, gap, record, ..., tail, with nothing unaccounted for.
  uint64_t at = 0;
  size_t g = 0;
  for (size_t i = 0; i < r.records.size(); ++i) {
    while (g < r.gaps.size() && r.gaps[g].begin == at) {
      FUZZ_REQUIRE(r.gaps[g].end > at);
      at = r.gaps[g++].end;
    }
    FUZZ_REQUIRE(r.offsets[i] == at);
    const std::string& p = r.records[i];
    FUZZ_REQUIRE(p.size() <= mnemo::io::kMaxRecordBytes);
    const uint8_t* f = data + at;
    const uint32_t len = f[0] | f[1] << 8 | f[2] << 16 | static_cast<uint32_t>(f[3]) << 24;
    FUZZ_REQUIRE(len == p.size());
    FUZZ_REQUIRE(bytes.substr(at + 8, len) == p);
    const uint8_t* c = f + 8 + len;
    const uint32_t crc = c[0] | c[1] << 8 | c[2] << 16 | static_cast<uint32_t>(c[3]) << 24;
    FUZZ_REQUIRE(crc == mnemo::io::mask_crc(mnemo::io::crc32c(p.data(), p.size())));
    at += 12 + len;
  }
  FUZZ_REQUIRE(g == r.gaps.size());
  FUZZ_REQUIRE(at == r.good_bytes);
  return 0;
}
