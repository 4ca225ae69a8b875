#include "core/data/task_fields.h"

#include <algorithm>

namespace mnemo {

void read_task_fields(const nlohmann::json& j, const std::string& kind, const std::vector<TaskField>& fields,
                      uint64_t* seed, const std::vector<std::string>& handled) {
  if (!j.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(j.type_name()));
  std::vector<std::string> known = {"name"};
  known.insert(known.end(), handled.begin(), handled.end());
  for (const auto& f : fields) known.push_back(f.name);
  known.push_back("seed");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == "name" || std::find(handled.begin(), handled.end(), k) != handled.end()) continue;
    if (k == "seed") {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        config_detail::throw_type("task.seed", FieldKind::kSeed, v);
      *seed = v.get<uint64_t>();
      continue;
    }
    auto f = std::find_if(fields.begin(), fields.end(), [&](const TaskField& t) { return t.name == k; });
    if (f == fields.end()) config_detail::throw_unknown("task." + k, " for task '" + kind + "'", join_names(known));
    if (!v.is_number_integer()) config_detail::throw_type("task." + k, FieldKind::kInt, v);
    *f->value = config_detail::int_of("task." + k, v, f->lo, f->hi);
  }
  for (const auto& f : fields) check_range("task." + f.name, *f.value, f.lo, f.hi);
}

nlohmann::json write_task_fields(const std::string& kind, const std::vector<TaskField>& fields, uint64_t seed) {
  nlohmann::json j = {{"name", kind}};
  for (const auto& f : fields)
    if (!f.unwritten_at || *f.value != *f.unwritten_at) j[f.name] = *f.value;
  j["seed"] = seed;
  return j;
}

}  // namespace mnemo
