// `mnemoscope train` as a function, for presets that train several configs the same way
// (app/commands/mtn_qa.cpp). See app/commands/train.cpp for what a run writes.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

struct TrainOptions {
  std::string config, out, sessions;
  int64_t steps = 0;
  bool steps_override = false;    // use `steps` (set by callers without a command line)
  bool resume = false;
  std::string init_from;          // --init-from WEIGHTS: start a new session from a model's weights
  bool init_matching = false;     // --init-matching: only the tensors of WEIGHTS whose name and shape match
  int64_t hash_stats_every = 0;   // --hash-stats-every N: bucket statistics to DIR/hash_stats.csv
  std::vector<std::string> sets;  // --set key=value
  // --data PATH (repeatable): the corpus of a "text" task (task.corpus; several make a list),
  // applied before the --set's. Without --config (and --resume): the zoo's text model
  // fine-tuned (sessions/text-finetune.json, app/commands/train_text.h), or with --random
  // sessions/text-memformer.json from scratch.
  std::vector<std::string> data;
  bool random = false;            // --random: with --data and no --config, from scratch (text-memformer.json)
  CLI::Option* o_steps = nullptr;
  // Data parallel (docs/training.md#distributed).
  int nproc = 1;                  // --nproc N: start N local ranks and wait for them (1 = this process only)
  int rank = -1, world_size = -1; // --rank, --world-size (-1: from RANK / WORLD_SIZE, else one process)
  std::string master;             // --master ADDR:PORT (else MASTER_ADDR / MASTER_PORT, default 127.0.0.1:29500)
  double dist_timeout = 60;       // --dist-timeout seconds: rendezvous and every collective
  std::string dist_backend = "gloo";
  std::string device = "cpu";     // --device cpu | cuda (a distributed rank: GPU LOCAL_RANK)
};

// Trains one session; returns the exit code (0, 1 non-finite loss or a lost rank, 130
// interrupted). Throws UsageError / mnemo::Error for bad input before anything is written.
// As one rank of a distributed job (--rank/--world-size/--master or RANK/WORLD_SIZE/...),
// rank 0 alone writes the session and prints; the others print only errors.
int run_train(const TrainOptions& c, std::ostream& out);

// `train --nproc N`: starts N ranks of this program on 127.0.0.1 (or --master's address)
// and waits for them (app/commands/train_launch.cpp). A rank that fails makes the others
// stop: they exit on their own within the timeout, and any left are terminated. Returns the
// job's exit code: 0, 130 stopped, the first failing rank's code (2 bad input), 1 a rank
// killed by a signal.
int launch_local_ranks(const TrainOptions& c, std::ostream& out);


}  // namespace mnemo::app
