// `mnemoscope eval` (core/train/trainer.h):
//   eval [--config F] --checkpoint CKPT [--split test] [--batches N] [--zero-memory] [--json] [--set k=v]...
//     Prints loss, per-character accuracy and exact match of a checkpoint (a training
//     checkpoint, a zoo model, or a weights-only file with --config; without --config the
//     checkpoint's own training config); --zero-memory zeroes every memory tensor between
//     segments (the ablation that shows what the memory carries).
#include "app/cli/flags.h"
#include "app/cli/format.h"
#include "app/commands/commands.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"
#include "core/train/lm_metrics.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"

namespace mnemo::app {

namespace {

struct EvalCommandOptions {
  std::string config, checkpoint, split = "test";
  int64_t batches = -2;
  bool zero_memory = false, json = false;
  std::vector<std::string> sets;
};

int run_eval(const EvalCommandOptions& c, std::ostream& out) {
  WeightsFile file;
  try {
    file = read_weights_file(c.checkpoint);
  } catch (const Error& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  // Without --config the checkpoint's own training config (curriculum segments included).
  if (c.config.empty() && file.training_config.is_null())
    throw UsageError("--checkpoint '" + c.checkpoint + "' names no training config (a " + file.kind +
                     "); pass --config with the config it was trained with");
  TrainingConfig cfg = c.config.empty()
                           ? config_with_sets(file.training_config, c.sets, "--checkpoint '" + c.checkpoint + "' config")
                           : load_training_config(c.config, c.sets);
  Split split;
  try {
    split = parse_split(c.split, "--split");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  if (c.batches == 0 || c.batches < -2) throw UsageError("--batches must be >= 1, or -1 for the whole split");
  MemoryModel model;
  try {
    model = make_model(cfg.model, cfg.train.seed);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  try {
    load_weights_checked(*model, cfg.model, file, c.config.empty() ? "the --set flags" : c.config);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  auto task = cfg.make_task();
  try {
    task->configure_model(*model);  // e.g. the qa task: MTN answer tagging
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  const int64_t batches = c.batches == -2 ? cfg.train.eval_batches : c.batches;
  ScoreTotals s = evaluate_model(*model, *task, split, batches, cfg.train.batch, c.zero_memory);
  const EvalMetrics e = eval_metrics(s, *task, file.step, split, c.zero_memory);
  if (c.json) {
    auto j = eval_record(e);
    j["checkpoint"] = file.path;  // the file evaluated (a session directory resolves to its latest)
    j["model"] = cfg.model.model;
    j["task"] = task->name();
    j["segments"] = task->segments();
    j["zero_memory"] = c.zero_memory;
    out << j.dump() << "\n";
  } else {
    out << cfg.model.model << " on " << task->name() << " (" << task->segments() << " segments)"
        << (c.zero_memory ? ", memory zeroed between segments" : "") << "\n"
        << eval_line(e) << "\n";
  }
  return 0;
}

class EvalCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("eval", "evaluate a checkpoint on a task split");
    c->add_option("--config", o_.config,
                  "training config JSON the checkpoint was made with (default: the checkpoint's own)");
    c->add_option("--checkpoint", o_.checkpoint, "checkpoint (.safetensors) from train")->required();
    c->add_option("--split", o_.split, "train | valid | test (default test)");
    c->add_option("--batches", o_.batches, "batches of train.batch examples (default train.eval_batches; -1 = all)");
    c->add_flag("--zero-memory", o_.zero_memory, "ablation: zero the memory between segments");
    c->add_flag("--json", o_.json, "print one JSON object");
    c->add_option("--set", o_.sets, "override a config field: --set task.segments=4 (repeatable)");
    return c;
  }
  int run(std::ostream& out) override { return run_eval(o_, out); }

 private:
  EvalCommandOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_eval_command() { return std::make_unique<EvalCommand>(); }

}  // namespace mnemo::app
