// `mnemoscope export`: figures of a recorded training session in batch (DESIGN §4, issue 7).
//
//   export --session DIR [--figure NAME[,NAME...]] [--steps A-B] [--format svg,png,csv] [--out OUT]
//     NAME: a curve of the metrics log (core/train/run_log.h curve_names(): loss, perplexity,
//     accuracy, lr, grad-norm, tokens-per-s, peak-memory, probe-loss, slot-types,
//     forget-norm, block-mass, hash-entropy), `maps` (every figure of every probe segment of
//     each recorded step in A-B, as `mnemoscope step` writes them), or `all` (default).
//     --steps limits curves and maps to training steps A..B (either side may be left out:
//     "100-", "-500"). OUT defaults to DIR/export. Nothing is recomputed: no model is built.
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace mnemo::app {

struct ExportCommand {
  CLI::App* cmd = nullptr;
  std::string session, figure = "all", steps, format = "png,svg,csv", out;
};

void add_export_command(CLI::App& app, ExportCommand& c);
// -1 when not selected; throws UsageError for bad input (exit 2) before writing anything.
int run_export_command(const ExportCommand& c, std::ostream& out);

// "A-B", "A-", "-B", "A" -> [lo, hi] (inclusive; hi = INT64_MAX when open). UsageError naming --steps.
void parse_step_range(const std::string& s, int64_t* lo, int64_t* hi);

}  // namespace mnemo::app
