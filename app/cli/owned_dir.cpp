#include "app/cli/owned_dir.h"

#include "app/cli/cli.h"
#include "core/io/atomic_file.h"
#include "core/io/json_file.h"
#include "core/io/read_file.h"
#include "core/io/session.h"

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

// What dir/manifest.json says this program owns, when it is a Mnemoscope manifest with a
// "files" list: the files written, and the folders a run was writing when it stopped
// ("pending": created by that run, listed before anything went into them).
struct Owned {
  std::set<std::string> files;
  std::set<std::string> pending;
};

Owned owned_paths(const std::string& dir) {
  Owned out;
  std::string text;  // a FIFO, a huge or too deeply nested file owns nothing
  if (!io::read_regular_file(dir + "/" + kManifest, &text, 16u << 20).empty()) return out;
  nlohmann::json m;
  try {
    m = io::parse_json(text);
  } catch (const nlohmann::json::exception&) {
    return out;
  }
  if (!m.is_object() || m.value("program", "") != "mnemoscope" || !m.contains("files") ||
      !m["files"].is_array())
    return out;
  for (const auto& e : m["files"])
    if (e.is_string() && safe_relative(e.get<std::string>())) out.files.insert(e.get<std::string>());
  out.files.insert(kManifest);
  if (m.contains("pending") && m["pending"].is_array())
    for (const auto& e : m["pending"])
      if (e.is_string() && safe_relative(e.get<std::string>())) out.pending.insert(e.get<std::string>());
  return out;
}

// Every folder on the way to a listed file ("a/b/c.png" -> "a", "a/b") or into a pending folder.
std::set<std::string> listed_folders(const Owned& owned) {
  std::set<std::string> out;
  for (const auto& f : owned.files)
    for (size_t p = f.find('/'); p != std::string::npos; p = f.find('/', p + 1)) out.insert(f.substr(0, p));
  for (const auto& f : owned.pending)
    for (size_t p = f.find('/'); p != std::string::npos; p = f.find('/', p + 1)) out.insert(f.substr(0, p));
  return out;
}

// Whether `rel` is the temp file of an interrupted atomic write of a listed file
// (core/io/atomic_file.h, viz/export.cpp: "DIR/.NAME.tmp-..." beside "DIR/NAME").
bool temp_of_listed(const std::string& rel, const std::set<std::string>& files) {
  const size_t slash = rel.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
  const size_t tmp = base.rfind(".tmp-");
  if (base.size() < 2 || base[0] != '.' || tmp == std::string::npos || tmp < 2) return false;
  return files.count(parent + base.substr(1, tmp - 1)) > 0;
}

// The entries of `dir` that its manifest does not own (`foreign`) and the temp files of listed
// files (`temps`), as relative paths.
void scan_owned_dir(const std::string& dir, const Owned& owned, std::vector<std::string>* foreign,
                    std::vector<std::string>* temps) {
  std::error_code ec;
  const std::set<std::string> folders = listed_folders(owned);
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    const bool folder = it->is_directory(ec) && !it->is_symlink(ec);
    if (folder) {
      if (owned.pending.count(rel)) {  // an interrupted run's folder: ours, whole
        it.disable_recursion_pending();
        continue;
      }
      if (folders.count(rel)) continue;  // ours: look inside
      foreign->push_back(rel + "/");     // a folder we never wrote into: the user's, whole
      it.disable_recursion_pending();
      continue;
    }
    if (owned.files.count(rel)) continue;
    if (temp_of_listed(rel, owned.files)) {
      temps->push_back(rel);
      continue;
    }
    foreign->push_back(rel);
  }
  if (ec) throw UsageError("'" + dir + "' cannot be read: " + ec.message());
  std::sort(foreign->begin(), foreign->end());
}

}  // namespace

std::vector<std::string> unlisted_entries(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out, temps;
  if (!fs::is_directory(dir, ec)) return out;
  scan_owned_dir(dir, owned_paths(dir), &out, &temps);
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
  const Owned owned = owned_paths(dir);
  std::vector<std::string> foreign, temps;
  scan_owned_dir(dir, owned, &foreign, &temps);
  auto removed = [&](const std::string& f) {
    if (ec) throw UsageError(flag + " '" + dir + "': --force could not remove '" + f + "': " + ec.message());
  };
  for (const auto& f : owned.files) {
    if (f == kManifest) continue;
    fs::remove(fs::path(dir) / f, ec);
    removed(f);
  }
  for (const auto& f : temps) {
    fs::remove(fs::path(dir) / f, ec);
    removed(f);
  }
  for (const auto& f : owned.pending) {
    const fs::path p = fs::path(dir) / f;
    std::error_code absent;  // a run killed before it made the folder: nothing to remove
    if (!fs::is_directory(fs::symlink_status(p, absent))) continue;
    fs::remove_all(p, ec);
    removed(f + "/");
  }
  // Folders left empty, deepest first.
  const std::set<std::string> folders = listed_folders(owned);
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    const fs::path p = fs::path(dir) / *it;
    if (fs::is_directory(p, ec) && fs::is_empty(p, ec)) fs::remove(p, ec);
  }
  ec.clear();
  fs::remove(fs::path(dir) / kManifest, ec);
  if (ec) throw UsageError(flag + " '" + dir + "': --force could not remove its manifest.json: " + ec.message());
}

void refuse_overwriting(const std::string& dir, const std::vector<std::string>& planned, const std::string& flag,
                        bool with_manifest) {
  const std::vector<std::string> foreign = unlisted_entries(dir);
  std::vector<std::string> hit;
  auto check = [&](const std::string& p) {
    const bool folder = !p.empty() && p.back() == '/';
    for (const auto& f : foreign)
      if (folder ? f.compare(0, p.size(), p) == 0 || f + "/" == p : f == p) {
        hit.push_back(folder ? p : f);
        return;
      }
  };
  for (const auto& p : planned) check(p);
  if (with_manifest) check(kManifest);
  if (hit.empty()) return;
  std::string names;
  for (size_t i = 0; i < hit.size() && i < 5; ++i) names += (i ? ", '" : "'") + hit[i] + "'";
  if (hit.size() > 5) names += " and " + std::to_string(hit.size() - 5) + " more";
  throw UsageError(flag + " '" + dir + "' already holds " + names + ", which Mnemoscope did not write (its " + kManifest +
                   " does not list " + (hit.size() == 1 ? "it" : "them") +
                   "); nothing was written. Pass a new or empty folder, or move " + (hit.size() == 1 ? "it" : "them") +
                   " out first");
}

void OwnedDirManifest::keep_listed() {
  for (const auto& f : owned_paths(dir_).files)
    if (f != kManifest) add(f);
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

void OwnedDirManifest::begin_folder(const std::string& relative_path) {
  if (std::find(pending_.begin(), pending_.end(), relative_path) == pending_.end()) pending_.push_back(relative_path);
}

void OwnedDirManifest::end_folder(const std::string& relative_path) {
  pending_.erase(std::remove(pending_.begin(), pending_.end(), relative_path), pending_.end());
}

void OwnedDirManifest::save(bool complete) {
  nlohmann::json m = meta_;
  m["files"] = files_;
  if (!pending_.empty()) m["pending"] = pending_;
  m["complete"] = complete;
  io::write_file_atomic(dir_ + "/" + kManifest, m.dump(2) + "\n");
}

std::unique_ptr<io::SessionWriteLock> lock_owned_dir(const std::string& dir, const std::string& flag,
                                                     const std::string& command) {
  const std::string busy = "another `mnemoscope " + command +
                           "` is writing into this folder; wait for it to end (or stop it) and run this again, or pass "
                           "another " + flag + ": two runs into one folder would mix their files and its manifest.json";
  try {
    return std::make_unique<io::SessionWriteLock>(dir, busy);
  } catch (const io::SessionError&) {
    throw UsageError(flag + " '" + dir + "': " + busy);
  } catch (const Error& e) {
    throw UsageError(flag + " '" + dir + "' cannot be locked for writing: " + e.what());
  }
}

}  // namespace mnemo::app
