// The safetensors reader's header layer (core/io/safetensors_header.h) on any bytes: it
// either rejects them with a SafetensorsError or returns entries that lie inside the data
// section, in offset order, without overlap, within the caps.
#include "core/io/safetensors_header.h"
#include "fuzz/targets/common.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto h = mnemo::io::parse_safetensors_bytes("fuzz.safetensors", bytes);
    FUZZ_REQUIRE(h.entries.size() <= mnemo::io::kMaxTensors);
    FUZZ_REQUIRE(h.data_start + h.data_size == size);
    uint64_t reach = 0;
    for (const auto& e : h.entries) {
      FUZZ_REQUIRE(e.begin <= e.end && e.end <= h.data_size);
      FUZZ_REQUIRE(e.shape.size() <= mnemo::io::kMaxRank);
      if (e.begin != e.end) {
        FUZZ_REQUIRE(e.begin >= reach);
        reach = e.end;
      }
      if (e.dtype == "BOOL") {
        try {
          mnemo::io::check_safetensors_bool("fuzz.safetensors", e.name, data + h.data_start + e.begin, e.end - e.begin);
        } catch (const mnemo::io::SafetensorsError&) {
        }
      }
    }
  } catch (const mnemo::io::SafetensorsError&) {
  }
  return 0;
}
