// Where the desktop app keeps its state between runs: ${XDG_CONFIG_HOME:-~/.config}/mnemoscope/
// holds imgui.ini (window layout) and recent.txt (recently opened documents, newest first).
#pragma once
#include <string>
#include <vector>

namespace mnemo::app {

// The directory (not created); "" when neither XDG_CONFIG_HOME nor HOME is set.
std::string config_dir();

class Settings {
 public:
  // dir "" disables persistence (nothing is read or written), e.g. for --quit runs.
  explicit Settings(std::string dir);
  const std::string& dir() const { return dir_; }
  bool persistent() const { return !dir_.empty(); }
  // Path of imgui.ini, "" when not persistent. Creates the directory when needed.
  std::string imgui_ini_path();
  const std::vector<std::string>& recent() const { return recent_; }
  // Moves `path` to the front (max 12 kept) and saves.
  void add_recent(const std::string& path);

 private:
  void save_recent();
  std::string dir_;
  std::vector<std::string> recent_;
};

// Absolute form of a path (realpath when it exists, else joined with the working directory).
std::string absolute_path(const std::string& path);

}  // namespace mnemo::app
