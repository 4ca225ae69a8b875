// File > Export HTML... (docs/gui.md#html-export): the shown document and model written as one
// self-contained HTML page by `mnemoscope html`, run as a child process of the app (this very
// program), so the page holds what the command computes for the same model, weights, seed and
// stepping: the app's numbers. A replayed training session is exported with its newest
// checkpoint over its probe document (a replay draws recordings; the page steps the weights).
// Plain C++ (no ImGui, no LibTorch): the shell draws the dialog, this builds the command line
// and runs it.
#pragma once
#include "app/view/published_view.h"

#include <sys/types.h>

#include <string>
#include <vector>

namespace mnemo::app {

// The arguments after the program name (`html --doc ... --out OUT`) that export segments
// from..to of what `s` shows. `scratch` is a folder for what the command needs as files (an
// in-memory document, a random model's config); it must exist. Empty, with *why, when `s` cannot
// be exported (nothing open, a replay whose session has no checkpoint yet).
std::vector<std::string> html_export_args(const PublishedView& s, int64_t from, int64_t to, bool mean_only,
                                          const std::string& out, const std::string& scratch, std::string* why);

// The default range: from the first visited segment to the last (at most 100 segments), else
// the shown one.
std::pair<int64_t, int64_t> html_export_range(const PublishedView& s);

// One child process, its stdout and stderr to a log file; poll() every frame.
class ChildRun {
 public:
  enum class State { kIdle, kRunning, kExited };
  ~ChildRun();  // a run still going is killed and waited for
  bool start(const std::string& program, const std::vector<std::string>& args, const std::string& log, std::string* error);
  State poll();
  int exit_code() const { return exit_code_; }
  std::string last_line() const;  // the log's newest non-empty line

 private:
  pid_t pid_ = -1;
  State state_ = State::kIdle;
  int exit_code_ = -1;
  std::string log_;
};

}  // namespace mnemo::app
