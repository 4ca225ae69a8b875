// The program's sources for parse_tour (app/gui/model/tour.h): zoo models from the zoo
// directory, model configs from the weights files' metadata, documents from disk.
#include "app/gui/model/tour.h"
#include "core/train/checkpoint.h"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace mnemo::app {

namespace {

bool regular_file(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

TourSources program_sources(const std::string& zoo_dir) {
  TourSources src;
  src.zoo = zoo_catalog(zoo_dir);
  src.file_exists = regular_file;
  src.read_model_config = [](const std::string& path) {
    WeightsFile w;
    try {
      w = read_weights_file(path);
    } catch (const std::exception& e) {
      throw InputError(std::string("cannot be read: ") + e.what());
    }
    if (!w.has_model_config()) throw InputError("holds no model config; use a zoo model or a checkpoint of `train`");
    try {
      ModelConfig cfg = ModelConfig::from_json(w.model_config);
      cfg.validate();
      return cfg;
    } catch (const std::exception& e) {
      throw InputError(std::string("cannot be read: ") + e.what());
    }
  };
  src.read_trained_segment_len = [](const std::string& path) -> int64_t {
    try {
      return trained_segment_len(read_weights_file(path));
    } catch (const std::exception&) {
      return 0;  // read_model_config has named the problem
    }
  };
  src.load_document = [](const std::string& path) { return load_document(path); };
  // The shipped assets (the zoo's parent: assets/models -> assets) hold the tours' documents.
  const auto slash = zoo_dir.find_last_of('/');
  src.trusted_roots.push_back(slash == std::string::npos ? "." : zoo_dir.substr(0, slash));
  src.trusted_roots.push_back(zoo_dir);
  return src;
}

}  // namespace

Tour parse_tour(const std::string& text, const std::string& path, const std::string& zoo_dir) {
  return parse_tour(text, path, program_sources(zoo_dir));
}

std::string read_tour_text(const std::string& path) {
  if (!regular_file(path)) throw TourError("tour " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) throw TourError("tour " + path + ": cannot be read");
  std::string text = ss.str();
  if (text.size() > (size_t{4} << 20)) throw TourError("tour " + path + ": larger than 4 MiB; is this a tour file?");
  return text;
}

Tour load_tour(const std::string& path, const std::string& zoo_dir) {
  const std::string text = read_tour_text(path);
  return parse_tour(text, path, zoo_dir);
}

}  // namespace mnemo::app
