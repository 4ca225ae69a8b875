// Pieces every subcommand shares: model flags, document and output-directory checks.
// All throw UsageError (exit code 2) with a message naming the flag or file.
#pragma once
#include "app/cli.h"
#include "core/data/document.h"
#include "core/models/config.h"
#include "core/models/model.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace mnemo::app {

bool is_dir(const std::string& p);
bool exists(const std::string& p);
// --out must be a writable directory or creatable inside one. Checked before anything is written.
void check_out_dir(const std::string& out);
// mkdir -p.
void make_dirs(const std::string& path);
// Loads --doc; DocumentError becomes UsageError naming --doc.
Document load_doc_flag(const std::string& path);

// The model flags every model kind shares (--slots is the memory size of whichever model).
struct ModelFlags {
  std::string config, model = "memformer", checkpoint, linear;
  int64_t slots = 0, segment_len = 0, heads = 0, layers = 0, dec_layers = 0, dim = 0, hash_bits = 0;
  double temperature = 0;
  bool no_forgetting = false;
  uint64_t seed = 0;
  CLI::Option *o_model{}, *o_slots{}, *o_len{}, *o_heads{}, *o_layers{}, *o_dec{}, *o_dim{}, *o_temp{}, *o_linear{}, *o_bits{};

  // Adds --config --model --slots --segment-len --heads --layers --dec-layers --dim
  // --temperature --no-forgetting --linear --hash-bits --seed --checkpoint to `c`.
  void add_to(CLI::App* c);
  // The config file (if any) with the given flags applied, validated.
  ModelConfig resolve() const;
  // Builds the model; loads the checkpoint or says it is randomly initialised.
  MemoryModel build(const ModelConfig& cfg, std::ostream& log) const;
};

}  // namespace mnemo::app
