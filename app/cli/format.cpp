#include "app/cli/format.h"

#include "core/train/trainer.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

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

}  // namespace mnemo::app
