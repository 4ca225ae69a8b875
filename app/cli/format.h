// How commands print progress and results: durations, rates, evaluation lines.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace mnemo {
struct EvalMetrics;
}

namespace mnemo::app {

std::string fmt_duration(double seconds);  // "45s", "3m07s", "2h05m"; "?" when unknown
std::string fmt_rate(double v);            // "812", "12.3k", "1.2M"
// "valid @ step 500: loss ... bits/token ... perplexity ... per-char accuracy ... exact match ... (N examples)"
std::string eval_line(const EvalMetrics& e);
// A word for a command line a user will paste into a shell: as it is when it holds only
// [A-Za-z0-9_./:=@%+,-], else single-quoted ("my runs" -> "'my runs'").
std::string shell_quote(const std::string& word);

// Whether stderr is a terminal (a progress line redraws in place there).
bool stderr_is_terminal();

// A progress line for a long computation, e.g. on stderr while `eval --doc` scores a large
// document: "eval --by-slot: segment 1200 of 16000 (7.5%), 1m02s, about 12m50s left".
// On a terminal it redraws one line ('\r') at most every half second, once the work has run a
// second, and ends it with a newline (finish); elsewhere (a log file, a pipe) it prints a whole line at each further tenth of the
// work, once the work has run kQuietSeconds (so a short run prints nothing), and at the end a
// line with the total time if it printed anything before. `clock` (seconds, monotonic) is for tests.
class ProgressLine {
 public:
  static constexpr double kQuietSeconds = 10.0, kQuietSecondsTerminal = 1.0;
  using Clock = std::function<double()>;
  ProgressLine(std::ostream& out, std::string what, bool terminal, Clock clock = nullptr);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  // `done` of `total` units (segments) are done.
  void update(int64_t done, int64_t total);
  // The work ended (also from the destructor): a terminal's line is ended, and a log gets the
  // total time when it had a line before.
  void finish();

 private:
  std::string text(int64_t done, int64_t total, double elapsed) const;
  std::ostream& out_;
  std::string what_;
  bool terminal_;
  Clock clock_;
  double start_ = 0, last_draw_ = -1;
  int last_tenth_ = 0;
  int64_t done_ = 0, total_ = 0;
  bool printed_ = false, finished_ = false;
};

}  // namespace mnemo::app
