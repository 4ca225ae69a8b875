#include "core/io/json_file.h"

#include "core/errors.h"
#include "core/io/read_file.h"

namespace mnemo::io {

namespace {
std::string too_deep_message(std::size_t offset) {
  return "[json.exception.too_deep] nesting deeper than " + std::to_string(kMaxJsonDepth) +
         " levels at byte " + std::to_string(offset) + "; Mnemoscope's files nest at most a few levels";
}
}  // namespace

JsonTooDeep::JsonTooDeep(std::size_t offset) : nlohmann::json::exception(599, too_deep_message(offset).c_str()) {}

namespace {
// Offset of the bracket that first goes deeper than `limit`, or npos.
std::size_t first_too_deep(std::string_view text, int limit, int* deepest) {
  int depth = 0;
  *deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character (\" does not end the string)
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > *deepest) *deepest = depth;
      if (depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return std::string_view::npos;
}
}  // namespace

int json_nesting_depth(std::string_view text, int stop_above) {
  int deepest = 0;
  first_too_deep(text, stop_above, &deepest);
  return deepest;
}

nlohmann::json parse_json(std::string_view text) {
  int deepest = 0;
  if (const std::size_t at = first_too_deep(text, kMaxJsonDepth, &deepest); at != std::string_view::npos)
    throw JsonTooDeep(at);
  return nlohmann::json::parse(text.begin(), text.end());
}

nlohmann::json read_json_config(const std::string& path) {
  std::string text;
  if (const std::string why = read_regular_file(path, &text, kMaxConfigBytes); !why.empty()) {
    if (why == kNoSuchFile) throw ConfigError("config file '" + path + "' cannot be opened; check the path");
    throw ConfigError("config file '" + path + "' " + why);
  }
  try {
    return parse_json(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range for "1e999", too deep
    throw ConfigError("config file '" + path + "' is not valid JSON: " + e.what());
  }
}

}  // namespace mnemo::io
