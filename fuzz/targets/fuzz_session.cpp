// The session opener's plain layer (core/io/session_manifest.h): the input is a manifest
// text, a NUL byte, and the text of checkpoints/latest. The manifest is accepted (a JSON
// object of a readable format version) or rejected with a SessionError; `latest` names a
// step file or nothing, and the name it names spells that step.
#include "core/io/session_manifest.h"
#include "fuzz/targets/common.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view manifest = in.substr(0, nul);
  const std::string_view latest = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  try {
    const auto m = mnemo::io::parse_session_manifest(manifest, "fuzz/manifest.json");
    FUZZ_REQUIRE(m.is_object());
    FUZZ_REQUIRE(m.at("format_version").get<int64_t>() <= mnemo::io::kSessionFormatVersion);
  } catch (const mnemo::io::SessionError&) {
  }
  if (const auto step = mnemo::io::parse_latest_pointer(latest)) {
    FUZZ_REQUIRE(*step >= 0);
    const std::string name = mnemo::io::step_file_name(*step);
    FUZZ_REQUIRE(latest.substr(0, name.size()) == name);
    FUZZ_REQUIRE(name.find('/') == std::string::npos);
    FUZZ_REQUIRE(mnemo::io::parse_step_file_name(name) == step);
  }
  return 0;
}
