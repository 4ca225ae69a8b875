// Reading a JSON config file (model, training and tour configs) with the project's messages.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace mnemo::io {

// The parsed content of `path`. Throws ConfigError "config file 'PATH' cannot be opened; check
// the path" or "config file 'PATH' is not valid JSON: <parser's reason>".
nlohmann::json read_json_config(const std::string& path);

}  // namespace mnemo::io
