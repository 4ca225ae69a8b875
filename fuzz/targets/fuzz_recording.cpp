// The probe-recording reader's layout layer (core/train/recording_layout.h) on any bytes
// read as a safetensors file: rejected with a named error, or every traced tensor belongs to
// a segment inside the probe and the probe's size matches its segments.
#include "core/io/safetensors_header.h"
#include "core/train/recording_layout.h"
#include "fuzz/targets/common.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  mnemo::io::SafetensorsHeader h;
  try {
    h = mnemo::io::parse_safetensors_bytes("fuzz.safetensors", bytes);
  } catch (const mnemo::io::SafetensorsError&) {
    return 0;
  }
  std::vector<mnemo::RecordingTensorInfo> infos;
  for (const auto& e : h.entries) infos.push_back({e.name, e.dtype, e.shape});
  std::sort(infos.begin(), infos.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  try {
    const auto l = mnemo::parse_recording_layout(infos, h.metadata, "fuzz.safetensors");
    FUZZ_REQUIRE(l.segments >= 1 && l.segment_len >= 1 && l.doc_bytes >= 1);
    FUZZ_REQUIRE((l.doc_bytes + l.segment_len - 1) / l.segment_len == l.segments);
    FUZZ_REQUIRE(static_cast<int64_t>(l.losses.size()) == l.segments);
    for (const auto& r : l.traced) FUZZ_REQUIRE(r.segment >= 0 && r.segment < l.segments && r.tensor < infos.size());
  } catch (const std::runtime_error&) {
  }
  return 0;
}
