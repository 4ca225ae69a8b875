#include "app/cli/assets.h"

#include "core/errors.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>

namespace mnemo::app {

namespace {
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
}  // namespace

std::string find_asset(const std::string& rel) {
  if (const char* env = std::getenv("MNEMO_ASSETS")) {
    std::string p = std::string(env) + "/" + rel;
    if (exists(p)) return p;
  }
  for (std::string base : {std::string("assets"), std::string(MNEMO_SOURCE_DIR) + "/assets"}) {
    std::string p = base + "/" + rel;
    if (exists(p)) {
      char buf[PATH_MAX];
      return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
    }
  }
  throw InputError("asset '" + rel + "' not found; set MNEMO_ASSETS to the project's assets/ directory");
}

std::string find_session_config(const std::string& name) { return find_asset("../sessions/" + name); }

bool find_demo_model(std::string* checkpoint, std::string* document) {
  try {
    *checkpoint = find_asset(std::string("models/") + kDemoModel + ".safetensors");
    *document = find_asset(std::string("models/") + kDemoModel + ".txt");
    return true;
  } catch (const InputError&) {
    checkpoint->clear();
    document->clear();
    return false;
  }
}

std::string find_text_model() {
  try {
    return find_asset(std::string("models/") + kTextModel + ".safetensors");
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace mnemo::app
