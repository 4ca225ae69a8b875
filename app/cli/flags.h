// Flags and inputs several subcommands share: the model flags (--config, --model, --slots,
// ...), --doc, --out, --format, --steps A-B ranges and training configs with --set
// overrides. Every check happens before anything is written; problems throw UsageError
// (exit code 2) or the core error that names the file.
#pragma once
#include "app/cli/cli.h"
#include "app/figures/figures.h"
#include "core/data/document.h"
#include "core/models/config.h"
#include "core/models/stepping.h"
#include "core/models/model.h"
#include "core/train/trainer.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mnemo::app {

bool is_dir(const std::string& p);
bool exists(const std::string& p);
// --out must be a writable directory or creatable inside one (InputError naming --out).
void check_out_dir(const std::string& out);
// mkdir -p (IoError naming the directory).
void make_dirs(const std::string& path);
// mkdir -p of an output directory given by `flag`: a failure is a UsageError naming the flag
// and the directory (e.g. "--out '/proc/foo' cannot be created: ...").
void make_out_dir(const std::string& path, const std::string& flag = "--out");
// An existing --out that holds files: UsageError naming it unless `force`, which removes
// the files an earlier run listed in its manifest (app/cli/owned_dir.h) and refuses, removing
// nothing, when anything else is there. A new or empty directory passes. The advice in the
// message is only --force when --force would succeed.
void prepare_out_dir(const std::string& out, bool force, const std::string& flag = "--out");
// Creates and removes a temporary file in `dir`, so a folder that looks writable but is not
// (/proc, a read-only mount, root's access() that always says yes) is refused before any
// work: UsageError "<what>: cannot write in '<dir>': <reason>".
void check_can_write_in(const std::string& dir, const std::string& what);
// A model ConfigError's message with the flag that sets its field (e.field(), the flag from
// ModelConfig::fields()) in front ("--slots: config field 'slots' = 0 is out of range
// 1..65536"), else `fallback` ("--config: ..."). Numbers in messages: mnemo::number_text.
std::string config_error_with_flags(const ConfigError& e, const std::string& fallback);
// Loads --doc; a missing, empty or unreadable file throws UsageError naming --doc.
Document load_doc_flag(const std::string& path);
// "a,b,,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& s);
// "png,svg,csv" (any non-empty subset); UsageError naming --format otherwise.
FigureFormats parse_formats(const std::string& list);
// "A-B", "A-", "-B", "A" -> [lo, hi] (inclusive; hi = INT64_MAX when open); UsageError naming `flag`.
void parse_step_range(const std::string& s, int64_t* lo, int64_t* hi, const std::string& flag = "--steps");
// A one-process --device: "cpu", or "cuda" (the first GPU). UsageError naming the fix when
// CUDA is asked for and this LibTorch sees no device, or for any other name.
torch::Device parse_device_flag(const std::string& name);

// A training config file with --set overrides (key.path=value, the value read as the field's
// kind: core/train/train_config.h apply_config_set), validated. UsageError naming --config,
// and the --set whose field is at fault ("--set 'train.lr=0': config field 'train.lr' = 0 ...").
TrainingConfig load_training_config(const std::string& path, const std::vector<std::string>& sets);
// The same for a config already read (`source` names where it came from in messages).
TrainingConfig config_with_sets(nlohmann::json j, const std::vector<std::string>& sets, const std::string& source);
// One --set argument "key=value" as (key, value); UsageError when it is not of that form.
std::pair<std::string, std::string> split_set_flag(const std::string& s);

// The model flags every model kind shares (--slots is the memory size of whichever model).
// Each row of ModelConfig::fields() with a flag ("--slots") is an option here, made from the
// row: its help, its kind (a bool row's flag sets false when it is spelt "--no-..."), its
// messages. So a model field with a flag is its row and nothing in this file.
struct ModelFlags {
  // One flag of a ModelConfig::fields() row: the text given, read as the row's kind in resolve().
  struct FieldFlag {
    std::string field;  // the row's name ("slots")
    std::string flag;   // "--slots"
    std::string text;   // the value given (a bool row's flag: unused)
    bool on = false;    // a bool row's flag was given
    CLI::Option* opt = nullptr;
    bool given() const { return opt && opt->count() > 0; }
  };
  std::vector<FieldFlag> fields;  // in the table's order; filled by add_to
  std::string config, checkpoint;
  bool random = false;  // --random: a randomly initialised model even when no other model flag is given
  uint64_t seed = 0;
  CLI::Option *o_config{}, *o_seed{}, *o_checkpoint{}, *o_random{};

  // The flag of the field `name`, or nullptr when it has none or add_to has not run.
  const FieldFlag* field_flag(const std::string& name) const;
  // The model flags given on the command line, in order ("--model", "--slots", ...).
  std::vector<std::string> given() const;
  // No model flag at all (nor --random): the command opens the zoo's text model
  // (apply_default_text_model), not a random one.
  bool wants_default_model() const { return given().empty() && !random && checkpoint.empty() && config.empty(); }
  // When wants_default_model() and the zoo's text model is there: sets checkpoint to it and
  // says so on `log`. Returns true when it did.
  bool apply_default_text_model(std::ostream& log);

  // Adds --config, the field flags (--model --slots --segment-len --dim --heads --layers
  // --dec-layers --temperature --no-forgetting --linear --hash-bits), --seed, --checkpoint
  // and --random to `c`.
  void add_to(CLI::App* c);
  // The config file (if any) with the given flags applied, validated. With --checkpoint: a
  // config that differs from the file's own is refused (check_against_checkpoint).
  ModelConfig resolve() const;
  // UsageError naming the differing fields and the flags (or --config) that asked for them
  // when --checkpoint's file records a model config other than `cfg`.
  void check_against_checkpoint(const ModelConfig& cfg) const;
  // Builds the model; loads the checkpoint or says it is randomly initialised.
  MemoryModel build(const ModelConfig& cfg, std::ostream& log) const;
  // The segment length to step `cfg` at (core/models/stepping.h): with a --checkpoint whose
  // training task is recorded, its training length, or --segment-len (which, with a
  // checkpoint, chooses how the document is cut and leaves the model's config alone: at most
  // its segment_len); without one, cfg.segment_len. UsageError naming --segment-len when out
  // of range.
  Stepping stepping(const ModelConfig& cfg) const;
  // --checkpoint's file, read once (resolve, the checks, stepping and build all need it).
  // Throws what read_weights_file throws; callers name the flag.
  const WeightsFile& checkpoint_file() const;

 private:
  mutable std::shared_ptr<const WeightsFile> file_;  // checkpoint_file()'s, for file_path_
  mutable std::string file_path_;
};

}  // namespace mnemo::app
