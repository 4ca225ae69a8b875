// The model zoo as the app's model picker sees it (File > Open model...): plain data read
// from the zoo files' headers (core/train/zoo.h; docs/zoo/README.md). A zoo model NAME may
// ship a document assets/models/NAME.txt on which its memory visibly works; the picker opens
// it together with the model. Torch-free header: the shell includes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

struct ZooModel {
  std::string path;      // the .safetensors file
  std::string name;      // e.g. "memformer-copy"
  std::string summary;   // the card's one line
  std::string card;      // docs/zoo/NAME.md (relative to the repository)
  std::string model;     // model kind from the config ("memformer", "rmt", ...)
  std::string task;      // task name from the config
  std::string document;  // assets/models/NAME.txt when it exists, else ""
  int64_t step = -1;
  int64_t bytes = 0;
};

// The zoo models in `dir`, sorted by name; files that are not zoo models are skipped and a
// missing directory gives an empty list (never throws: the picker then says the zoo is empty).
std::vector<ZooModel> zoo_catalog(const std::string& dir);

}  // namespace mnemo::app
