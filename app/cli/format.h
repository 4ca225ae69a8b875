// How commands print progress and results: durations, rates, evaluation lines.
#pragma once
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

}  // namespace mnemo::app
