#include "core/data/task_fields.h"

#include <algorithm>

namespace mnemo {

void check_task_range(const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw ConfigError("config field 'task." + field + "' = " + std::to_string(v) + " is out of range " +
                      std::to_string(lo) + ".." + std::to_string(hi));
}

void read_task_fields(const nlohmann::json& j, const std::string& kind,
                      const std::vector<std::pair<std::string, int64_t*>>& fields, uint64_t* seed,
                      const std::vector<std::string>& handled) {
  if (!j.is_object()) throw ConfigError("config field 'task' must be a JSON object, got " + std::string(j.type_name()));
  std::string known = "name";
  for (const auto& h : handled) known += ", " + h;
  for (const auto& f : fields) known += ", " + f.first;
  known += ", seed";
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == "name" || std::find(handled.begin(), handled.end(), k) != handled.end()) continue;
    if (k == "seed") {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        throw ConfigError("config field 'task.seed' must be a non-negative integer, got " + v.dump());
      *seed = v.get<uint64_t>();
      continue;
    }
    auto f = std::find_if(fields.begin(), fields.end(), [&](const auto& p) { return p.first == k; });
    if (f == fields.end())
      throw ConfigError("config field 'task." + k + "' is unknown for task '" + kind + "'; known fields: " + known);
    if (!v.is_number_integer()) throw ConfigError("config field 'task." + k + "' must be an integer, got " + v.dump());
    *f->second = v.get<int64_t>();
  }
}

}  // namespace mnemo
