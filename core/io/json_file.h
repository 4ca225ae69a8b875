// Reading JSON with the project's limits: every file or flag Mnemoscope parses as JSON (configs,
// session manifests, metrics records, checkpoint and zoo metadata, tours) goes through
// parse_json, which refuses nesting deeper than kMaxJsonDepth before the JSON library sees it
// (its copies and comparisons recurse: a 200,000-deep array overflows the stack).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace mnemo::io {

// Deepest nesting of arrays and objects parse_json accepts. Mnemoscope's own files nest at most
// 5 levels; the Python package uses the same limit (python/mnemoscope/errors.py).
inline constexpr int kMaxJsonDepth = 64;

// Thrown by parse_json for nesting beyond kMaxJsonDepth. A nlohmann::json::exception, so every
// caller's "is not valid JSON: <reason>" message names the file and says why.
struct JsonTooDeep : nlohmann::json::exception {
  explicit JsonTooDeep(std::size_t offset);
};

// The deepest nesting of arrays and objects in `text` (strings and escapes skipped), scanning no
// further than one level past `stop_above`. Linear time, no recursion, no allocation.
int json_nesting_depth(std::string_view text, int stop_above = kMaxJsonDepth);

// nlohmann::json::parse(text) after checking the nesting depth; throws nlohmann::json::exception
// (parse_error, out_of_range for "1e999", JsonTooDeep).
nlohmann::json parse_json(std::string_view text);

// The parsed content of config file `path` (a regular file of at most 64 MiB). Throws ConfigError
// "config file 'PATH' cannot be opened; check the path", "... is not a regular file ...", or
// "config file 'PATH' is not valid JSON: <parser's reason>".
nlohmann::json read_json_config(const std::string& path);

}  // namespace mnemo::io
