// `mnemoscope mtn-qa`: the Memory Transformer Network paper's comparison (§2.2-3.2) on the
// synthetic long-document QA task (core/data/qa_task.h): MTN, the naive-memory and the
// no-memory baselines trained with the same data, steps and optimizer, evaluated with the
// paper's recall, false-positive rate and pseudo-F1, and with the choice accuracy (the
// right city has the largest mean P(answer) of the listed cities; chance = 1 / candidates).
//
//   mtn-qa --config sessions/mtn-qa.json --out DIR [--models mtn,mtn-naive,no-memory]
//          [--steps N] [--threads N]
//
// Config JSON: {"model": ModelConfig (its "model" is replaced by each of --models),
//   "task": QaTaskOptions, "train": {"steps", "batch", "lr", "warmup", "weight_decay",
//   "clip", "eval_every", "eval_batches", "test_batches", "seed"}}; unknown keys are refused.
// DIR receives curves.csv (every evaluation), results.json (test metrics per model),
// pseudo_f1 / choice_accuracy / valid_loss / answer_prob figures (PNG + SVG), <model>.safetensors weights, and
// example-mtn/: the trained MTN's memory figures on test example 0 after reading.
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace mnemo::app {

struct MtnQaCommand {
  CLI::App* cmd = nullptr;
  std::string config, out, models = "mtn,mtn-naive,no-memory";
  int64_t steps = 0, threads = 0;
  CLI::Option* o_steps = nullptr;
};

void add_mtn_qa_command(CLI::App& app, MtnQaCommand& c);
// Runs the command when it was selected and returns its exit code; -1 otherwise.
// Throws UsageError for bad input (exit 2).
int run_mtn_qa_command(const MtnQaCommand& c, std::ostream& out);

}  // namespace mnemo::app
