#include "core/data/dataset_cache.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace mnemo {

std::string dataset_cache_dir() {
  if (const char* d = std::getenv("MNEMO_DATA_DIR"); d && *d) return d;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = ".cache";
  return base + "/mnemoscope/datasets";
}

std::string dataset_fix_hint(const std::string& name, const std::string& package_dir) {
  std::string root = package_dir;
  const std::string tail = "/package";
  if (root.size() > tail.size() && root.compare(root.size() - tail.size(), tail.size(), tail) == 0)
    root.resize(root.size() - tail.size());
  return "fetch it with `bash .ci/fetch-data " + name + "` (to repair a damaged copy, first delete " + root +
         "), or point MNEMO_DATA_DIR at a cache that has it";
}

std::string dataset_package_dir(const std::string& name, const std::string& cache_dir) {
  const std::string cache = cache_dir.empty() ? dataset_cache_dir() : cache_dir;
  const std::string root = cache + "/" + name;
  const std::string pkg = root + "/package";
  struct stat st {};
  if (::stat(pkg.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw DatasetError("dataset '" + name + "' is not in the cache (" + pkg + " does not exist); " +
                       dataset_fix_hint(name, pkg));
  const std::string marker = root + "/.complete";
  if (::stat(marker.c_str(), &st) != 0)
    throw DatasetError("dataset '" + name + "' in " + root + " is incomplete (no .complete marker: the fetch did not "
                       "finish); " + dataset_fix_hint(name, pkg));
  return pkg;
}

std::string read_dataset_file(const std::string& path, const std::string& name, const std::string& package_dir) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatasetError("dataset '" + name + "': file " + path + " is missing or unreadable; " +
                              dataset_fix_hint(name, package_dir));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DatasetError("dataset '" + name + "': reading " + path + " failed; " + dataset_fix_hint(name, package_dir));
  return s;
}

}  // namespace mnemo
