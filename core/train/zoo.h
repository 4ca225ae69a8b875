// The model zoo: trained models shipped in assets/models/ (docs/zoo/README.md).
//
// A zoo model is one safetensors file of model weights only (no optimizer state), with the
// metadata
//   format = "mnemoscope-zoo-model", format_version, name, summary (the card's one line),
//   card (docs/zoo/<name>.md), config (the whole training config; task.segments = the count
//   the model was trained to), step, source (the checkpoint it was packed from),
//   program_version, and config_sets (a JSON array of "key=value") when the config was edited
//   at packing, e.g. to name the corpus its card evaluates it on; a text model also carries
//   training_text (core/data/text_stats.h: the byte counts and sampled passages of its
//   training split, from the config as trained)
// so `eval`, `step` and `gui --checkpoint` open it with no --config (core/train/checkpoint.h
// read_weights_file), and the app's model picker lists the zoo from the headers alone.
#pragma once
#include "core/data/text_stats.h"
#include "core/train/checkpoint.h"

#include <optional>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

inline constexpr int kZooVersion = 1;
inline constexpr int64_t kZooMaxBytes = 4 * 1024 * 1024;  // per model (the repository's budget)

struct ZooEntry {
  std::string path, name, summary, card;
  nlohmann::json config;  // training config
  int64_t step = -1;
  int64_t bytes = 0;
  std::string training_text_note;  // pack_zoo_model: what it recorded of a text model's training text
};

// Packs the weights of `checkpoint` (a training checkpoint with its config) into `out`.
// name: [a-z0-9-]+; summary: one line. `sets` (key, value) edit the config first, as
// `train --set` does (apply_config_set), and are recorded in config_sets: for a model trained
// on a made corpus and evaluated on a public one (task.corpus=sotu, task.split=null).
// Throws ConfigError (bad name, a checkpoint without config, a set the config refuses, a file
// over kZooMaxBytes; nothing is left at `out` then) or io::SafetensorsError.
ZooEntry pack_zoo_model(const std::string& checkpoint, const std::string& out, const std::string& name,
                        const std::string& summary, const std::string& card,
                        const std::vector<std::pair<std::string, std::string>>& sets = {});

// The statistics of a text model's training text: its "training_text" metadata, else computed
// from its training config's corpus when that is here and its training split holds at most
// kMaxStatsCorpusBytes; nullopt otherwise (not a text model, corpus gone). *how names the
// source. Throws ConfigError for damaged metadata.
inline constexpr int64_t kMaxStatsCorpusBytes = int64_t{64} << 20;
std::optional<TrainingTextStats> training_text_stats_of(const WeightsFile& f, std::string* how = nullptr);
// Whether the file's training config trains a language model on text (task "text" or
// "moby-dick"): the models a document is held against (a synthetic task's model reads episodes).
bool trained_on_text(const WeightsFile& f);
bool trained_on_text_file(const std::string& path);
// The same from a weights file's header alone (metadata "training_text", else its "config").
std::optional<TrainingTextStats> training_text_stats_of_file(const std::string& path, std::string* how = nullptr);

// Reads a safetensors file's metadata from its header only (no tensor data).
// Throws io::SafetensorsError naming the file.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

// The zoo models in `dir` (files *.safetensors with zoo metadata), sorted by name; files that
// are not zoo models are skipped. A missing directory gives an empty list.
std::vector<ZooEntry> list_zoo(const std::string& dir);

}  // namespace mnemo
