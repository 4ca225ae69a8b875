// `mnemoscope train` and `mnemoscope eval` (core/train/trainer.h).
//
//   train --config sessions/<name>.json [--out DIR | --sessions ROOT] [--steps N] [--set key=value]... [--resume]
//     Trains into a session directory DIR (default ROOT/<name>, ROOT = $MNEMO_SESSIONS or
//     ~/.local/share/mnemoscope/sessions): manifest.json, traces/ (probe recordings),
//     checkpoints/step-N.safetensors + latest, metrics.log (DESIGN §4). Shows a progress
//     line (\r updates on a TTY, plain lines otherwise), evaluates every eval_every steps,
//     saves every save_every steps and at the end; Ctrl-C stops after the current step and
//     saves. --resume continues DIR from its latest checkpoint. --set overrides one field of
//     the config by its dotted path, the value read as JSON (a bare word is a string):
//     --set task.segments=4 --set model.segment_len=19 --set model.slots=19
//     --hash-stats-every N (models with "linear": "hashed"): at the start and every N steps,
//     a forward pass over the first train.batch valid examples records the bucket statistics
//     of the first and last table of every hashed projection in DIR/hash_stats.csv
//     (core/train/hash_probe.h; columns step,path,table,tables,buckets,lookups,entropy,...).
//   eval --config F --checkpoint CKPT [--split test] [--batches N] [--zero-memory] [--json] [--set k=v]...
//     Prints loss, per-character accuracy and exact match of a checkpoint (a training
//     checkpoint or a weights-only file).
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct TrainCommands {
  CLI::App* train = nullptr;
  CLI::App* eval = nullptr;
  // train
  std::string config, out, sessions;
  int64_t steps = 0;
  bool resume = false;
  int64_t hash_stats_every = 0;   // --hash-stats-every N: bucket statistics to DIR/hash_stats.csv
  std::vector<std::string> sets;  // --set key=value (train and eval)
  CLI::Option* o_steps = nullptr;
  // eval
  std::string eval_config, checkpoint, split = "test";
  int64_t batches = -2;
  bool zero_memory = false, json = false;
};

// Where `train --config F` puts its session without --out: ROOT/<config name>, ROOT =
// `sessions` when given, else $MNEMO_SESSIONS, else $XDG_DATA_HOME/mnemoscope/sessions
// (~/.local/share/mnemoscope/sessions).
std::string default_session_dir(const std::string& config, const std::string& sessions = "");

// Adds the two subcommands to `app`; their flags land in `c`.
void add_train_commands(CLI::App& app, TrainCommands& c);
// Runs whichever of them was selected and returns its exit code; -1 when neither was.
// Throws UsageError for bad input (exit 2).
int run_train_commands(const TrainCommands& c, std::ostream& out);

}  // namespace mnemo::app
