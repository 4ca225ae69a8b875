#include "app/cli/owned_dir.h"

#include "app/cli/cli.h"
#include "core/io/atomic_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace mnemo::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "manifest.json";

// A listed path is honoured only when it stays inside the folder: relative, no "..", no ".".
bool safe_relative(const std::string& p) {
  if (p.empty() || p.front() == '/') return false;
  std::stringstream ss(p);
  for (std::string part; std::getline(ss, part, '/');)
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

// The files dir/manifest.json lists, when it is a Mnemoscope manifest with a "files" list.
std::set<std::string> listed_files(const std::string& dir) {
  std::set<std::string> out;
  std::ifstream f(dir + "/" + kManifest);
  if (!f) return out;
  nlohmann::json m = nlohmann::json::parse(f, nullptr, false);
  if (m.is_discarded() || !m.is_object() || m.value("program", "") != "mnemoscope" || !m.contains("files") ||
      !m["files"].is_array())
    return out;
  for (const auto& e : m["files"])
    if (e.is_string() && safe_relative(e.get<std::string>())) out.insert(e.get<std::string>());
  out.insert(kManifest);
  return out;
}

// Every folder on the way to a listed file ("a/b/c.png" -> "a", "a/b").
std::set<std::string> listed_folders(const std::set<std::string>& files) {
  std::set<std::string> out;
  for (const auto& f : files)
    for (size_t p = f.find('/'); p != std::string::npos; p = f.find('/', p + 1)) out.insert(f.substr(0, p));
  return out;
}

}  // namespace

std::vector<std::string> unlisted_entries(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  if (!fs::is_directory(dir, ec)) return out;
  const std::set<std::string> files = listed_files(dir);
  const std::set<std::string> folders = listed_folders(files);
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    const bool folder = it->is_directory(ec) && !it->is_symlink(ec);
    if (folder) {
      if (folders.count(rel)) continue;  // ours: look inside
      out.push_back(rel + "/");          // a folder we never wrote into: the user's, whole
      it.disable_recursion_pending();
      continue;
    }
    if (!files.count(rel)) out.push_back(rel);
  }
  if (ec) throw UsageError("'" + dir + "' cannot be read: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

void refuse_unowned(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  const fs::path canon = fs::weakly_canonical(dir, ec);
  if (!ec && canon == canon.root_path()) throw UsageError(flag + " '" + dir + "': --force will not clear a file system root");
  const std::vector<std::string> foreign = unlisted_entries(dir);
  if (!foreign.empty()) {
    std::string names;
    for (size_t i = 0; i < foreign.size() && i < 5; ++i) names += (i ? ", '" : "'") + foreign[i] + "'";
    if (foreign.size() > 5) names += " and " + std::to_string(foreign.size() - 5) + " more";
    throw UsageError(flag + " '" + dir + "' holds " + std::to_string(foreign.size()) + " entr" +
                     (foreign.size() == 1 ? "y" : "ies") + " that Mnemoscope did not write (" + names +
                     "); --force clears only the files listed in its manifest.json, so nothing was removed. Pass a "
                     "new or empty directory, or move those entries out first");
  }
}

void clear_owned_dir(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  refuse_unowned(dir, flag);
  const std::set<std::string> files = listed_files(dir);
  for (const auto& f : files) {
    if (f == kManifest) continue;
    fs::remove(fs::path(dir) / f, ec);
    if (ec) throw UsageError(flag + " '" + dir + "': --force could not remove '" + f + "': " + ec.message());
  }
  // Folders left empty, deepest first.
  std::set<std::string> folders = listed_folders(files);
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    const fs::path p = fs::path(dir) / *it;
    if (fs::is_directory(p, ec) && fs::is_empty(p, ec)) fs::remove(p, ec);
  }
  fs::remove(fs::path(dir) / kManifest, ec);
  if (ec) throw UsageError(flag + " '" + dir + "': --force could not remove its manifest.json: " + ec.message());
}

OwnedDirManifest::OwnedDirManifest(std::string dir, nlohmann::json meta) : dir_(std::move(dir)), meta_(std::move(meta)) {
  meta_["program"] = "mnemoscope";
}

void OwnedDirManifest::add(const std::string& relative_path) {
  if (listed_.insert(relative_path).second) files_.push_back(relative_path);
}

void OwnedDirManifest::add_written(const std::string& path) {
  std::string p = path;
  const std::string prefix = dir_ + "/";
  if (p.compare(0, prefix.size(), prefix) == 0) p = p.substr(prefix.size());
  while (p.compare(0, 2, "./") == 0) p = p.substr(2);
  add(p);
}

void OwnedDirManifest::save(bool complete) {
  nlohmann::json m = meta_;
  m["files"] = files_;
  m["complete"] = complete;
  io::write_file_atomic(dir_ + "/" + kManifest, m.dump(2) + "\n");
}

}  // namespace mnemo::app
