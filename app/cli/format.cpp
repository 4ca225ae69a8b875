#include "app/cli/format.h"

#include "core/train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include <unistd.h>

namespace mnemo::app {

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t / 60 % 60));
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

std::string fmt_rate(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string eval_line(const EvalMetrics& e) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s%s @ step %lld: loss %.4f  bits/token %.4f  perplexity %.3f  per-char accuracy %.4f  exact match %.4f  ",
                split_name(e.split), e.zero_memory ? " (memory zeroed)" : "", static_cast<long long>(e.step), e.loss,
                e.bits_per_token, e.perplexity, e.accuracy, e.exact_match);
  std::string line = buf;
  // A part of the split (train.eval_batches) is its first examples, the same ones every time:
  // said, so that the figure is not read as the whole split's (`eval --batches -1` scores it all).
  if (e.split_examples > e.examples)
    line += "(" + std::to_string(e.examples) + " of " + std::to_string(e.split_examples) + " examples: the split's first)";
  else
    line += "(" + std::to_string(e.examples) + " examples)";
  for (const auto& [k, v] : e.extra) {  // the task's own metrics (e.g. qa: choice_accuracy)
    char item[96];
    std::snprintf(item, sizeof item, "  %s %.4f", k.c_str(), v);
    line += item;
  }
  return line;
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                             "0123456789_./:=@%+,-") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

bool stderr_is_terminal() { return ::isatty(::fileno(stderr)) != 0; }

ProgressLine::ProgressLine(std::ostream& out, std::string what, bool terminal, Clock clock)
    : out_(out), what_(std::move(what)), terminal_(terminal), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
  start_ = clock_();
}

ProgressLine::~ProgressLine() {
  try {
    finish();
  } catch (...) {  // a destructor never throws; the stream may be gone bad
  }
}

std::string ProgressLine::text(int64_t done, int64_t total, double elapsed) const {
  char buf[160];
  const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0;
  std::snprintf(buf, sizeof buf, ": segment %lld of %lld (%.1f%%), %s", static_cast<long long>(done),
                static_cast<long long>(total), pct, fmt_duration(elapsed).c_str());
  std::string line = what_ + buf;
  if (done > 0 && done < total)
    line += ", about " + fmt_duration(elapsed / static_cast<double>(done) * static_cast<double>(total - done)) + " left";
  return line;
}

void ProgressLine::update(int64_t done, int64_t total) {
  if (finished_ || total <= 0) return;
  done_ = done;
  total_ = total;
  const double now = clock_(), elapsed = now - start_;
  if (terminal_) {
    if (elapsed < kQuietSecondsTerminal || (last_draw_ >= 0 && now - last_draw_ < 0.5 && done < total)) return;
    last_draw_ = now;
    out_ << "\r" << text(done, total, elapsed) << "\x1b[K" << std::flush;
    printed_ = true;
    return;
  }
  const int tenth = static_cast<int>(10 * done / total);
  if (tenth <= last_tenth_ || elapsed < kQuietSeconds || done >= total) return;
  last_tenth_ = tenth;
  out_ << text(done, total, elapsed) << "\n" << std::flush;
  printed_ = true;
}

void ProgressLine::finish() {
  if (finished_) return;
  finished_ = true;
  if (!printed_) return;
  if (terminal_) {
    out_ << "\n" << std::flush;
    return;
  }
  out_ << what_ << ": " << done_ << " of " << total_ << " segments in " << fmt_duration(clock_() - start_) << "\n"
       << std::flush;
}

}  // namespace mnemo::app
