#include "app/gui/model/zoo_catalog.h"

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
        m.model = e.config["model"].value("model", std::string());
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
