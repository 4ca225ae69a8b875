// Model config JSON parsing (with the depth limit) and validation (core/models/config.h) on any text: it is
// rejected with a ConfigError naming the field, or it validates and survives a round trip
// through to_json unchanged.
#include "core/io/json_file.h"
#include "core/models/config.h"
#include "fuzz/targets/common.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    // As every config is read (core/io/json_file.h): nesting past 64 levels is refused first.
    j = mnemo::io::parse_json(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  try {
    const auto& src = j.is_object() && j.contains("model") && j["model"].is_object() ? j["model"] : j;
    const mnemo::ModelConfig c = mnemo::ModelConfig::from_json(src);
    c.validate();
    const nlohmann::json back = c.to_json();
    const mnemo::ModelConfig again = mnemo::ModelConfig::from_json(back);
    FUZZ_REQUIRE(again.to_json() == back);
  } catch (const mnemo::ConfigError&) {
  }
  return 0;
}
