// The model zoo as the app's model picker sees it (File > Open model...): plain data read
// from the zoo files' headers (core/train/zoo.h; docs/zoo/README.md). A zoo model NAME may
// ship a document assets/models/NAME.txt on which its memory visibly works; the picker opens
// it together with the model. Torch-free header: the shell includes it.
#pragma once
#include "core/models/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct ZooModel {
  std::string path;        // the .safetensors file
  std::string name;        // e.g. "memformer-copy"
  std::string summary;     // the card's one line
  std::string card;        // docs/zoo/NAME.md (relative to the repository)
  std::string model_kind;  // from the config ("memformer", "rmt", ...)
  std::string task;        // task name from the config
  std::string document;    // assets/models/NAME.txt when it exists, else ""
  int64_t step = -1;
  int64_t bytes = 0;
};

// The zoo models in `dir`, sorted by name; files that are not zoo models are skipped and a
// missing directory gives an empty list (never throws: the picker then says the zoo is empty).
std::vector<ZooModel> zoo_catalog(const std::string& dir);

// A model named by the user for a comparison (`gui --compare-model`, File > Compare with
// model...): a zoo name (looked up in zoo_dir), a weights file (its own config), or a model
// config JSON (random weights). Fills *cfg and *label (the zoo name, or the file's base
// name) and returns the weights file ("" for a config). Throws an InputError or ConfigError
// naming the problem (missing file, a weights file of no known model, a bad config).
std::string resolve_compare_model(const std::string& what, const std::string& zoo_dir, ModelConfig* cfg,
                                  std::string* label);
// "dir/name.ext" -> "name".
std::string base_name(const std::string& path);

}  // namespace mnemo::app
