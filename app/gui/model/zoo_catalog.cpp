#include "app/gui/model/zoo_catalog.h"

#include "core/train/checkpoint.h"
#include "core/train/zoo.h"

#include <sys/stat.h>

namespace mnemo::app {

namespace {
bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
}  // namespace

std::vector<ZooModel> zoo_catalog(const std::string& dir) {
  std::vector<ZooModel> out;
  if (dir.empty()) return out;
  std::vector<ZooEntry> entries;
  try {
    entries = list_zoo(dir);
  } catch (const std::exception&) {
    return out;
  }
  for (const auto& e : entries) {
    ZooModel m;
    m.path = e.path;
    m.name = e.name;
    m.summary = e.summary;
    m.card = e.card;
    m.step = e.step;
    m.bytes = e.bytes;
    if (e.config.is_object()) {
      if (e.config.contains("model") && e.config["model"].is_object())
        m.model_kind = e.config["model"].value("model", std::string());
      if (e.config.contains("task") && e.config["task"].is_object())
        m.task = e.config["task"].value("name", std::string());
    }
    const std::string doc = dir + "/" + e.name + ".txt";
    if (is_file(doc)) m.document = doc;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace mnemo::app

namespace mnemo::app {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = b.find_last_of('.');
  if (dot != std::string::npos && dot > 0) b.resize(dot);
  return b;
}

std::string resolve_compare_model(const std::string& what, const std::string& zoo_dir, ModelConfig* cfg,
                                  std::string* label) {
  if (what.empty()) throw InputError("no model given: name a zoo model, a weights file or a model config (.json)");
  for (const auto& z : zoo_catalog(zoo_dir)) {
    if (z.name == what || z.path == what) {
      WeightsFile w = read_weights_file(z.path);
      if (w.has_model_config()) *cfg = ModelConfig::from_json(w.model_config);
      *label = z.name;
      return z.path;
    }
  }
  if (!is_file(what))
    throw InputError("'" + what + "' is neither a zoo model nor a file; name a zoo model, a weights file or a model config");
  *label = base_name(what);
  const bool json = what.size() > 5 && what.compare(what.size() - 5, 5, ".json") == 0;
  if (json) {
    *cfg = ModelConfig::load(what);
    return "";
  }
  WeightsFile w = read_weights_file(what);
  if (w.has_model_config()) *cfg = ModelConfig::from_json(w.model_config);
  return what;
}

}  // namespace mnemo::app
