#include "app/gui/platform/settings.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <fstream>

namespace mnemo::app {

namespace {
constexpr size_t kMaxRecent = 12;

bool make_dir_p(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty()) {
        struct stat st {};
        if (::stat(cur.c_str(), &st) != 0 && ::mkdir(cur.c_str(), 0755) != 0) return false;
      }
    }
    if (i < path.size()) cur.push_back(path[i]);
  }
  return true;
}
}  // namespace

std::string config_dir() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/mnemoscope";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/mnemoscope";
  return "";
}

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  if (path[0] == '/') return path;
  if (::getcwd(buf, sizeof buf)) return std::string(buf) + "/" + path;
  return path;
}

Settings::Settings(std::string dir) : dir_(std::move(dir)) {
  if (!persistent()) return;
  std::ifstream in(dir_ + "/recent.txt");
  std::string line;
  while (std::getline(in, line) && recent_.size() < kMaxRecent)
    if (!line.empty()) recent_.push_back(line);
}

std::string Settings::imgui_ini_path() {
  if (!persistent() || !make_dir_p(dir_)) return "";
  return dir_ + "/imgui.ini";
}

void Settings::add_recent(const std::string& path) {
  if (path.empty()) return;
  recent_.erase(std::remove(recent_.begin(), recent_.end(), path), recent_.end());
  recent_.insert(recent_.begin(), path);
  if (recent_.size() > kMaxRecent) recent_.resize(kMaxRecent);
  save_recent();
}

void Settings::save_recent() {
  if (!persistent() || !make_dir_p(dir_)) return;
  const std::string tmp = dir_ + "/.recent.txt.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    for (const auto& r : recent_) out << r << "\n";
    if (!out) return;
  }
  std::rename(tmp.c_str(), (dir_ + "/recent.txt").c_str());
}

}  // namespace mnemo::app
