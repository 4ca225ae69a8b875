#include "core/io/json_file.h"

#include "core/errors.h"

#include <fstream>
#include <sstream>

namespace mnemo::io {

nlohmann::json read_json_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("config file '" + path + "' cannot be opened; check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError("config file '" + path + "' is not valid JSON: " + e.what());
  }
}

}  // namespace mnemo::io
