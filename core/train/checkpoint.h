// Training checkpoints: one safetensors file (docs/formats.md#sessions) holding the model weights by module
// path, the AdamW state ("optim.<param>.exp_avg" / ".exp_avg_sq" / ".step"), and in the
// metadata the format, the step and the whole training config JSON. Written atomically.
// A checkpoint is also a weights file: `--checkpoint F` elsewhere skips the "optim." tensors.
//
// Every weights file the project writes names the config it belongs to (docs/formats.md
// "Weights files"): a training checkpoint and a zoo model carry the whole training config
// in `config` (a curriculum's current segment count in `segments`), an export-weights file
// the model config in `model`. read_weights_file() reads any of them, so `step`, `eval` and
// `gui` open a checkpoint without --config; load_weights_checked() turns "tensor X is
// missing" for a file of another config into a message naming the differing fields.
#pragma once
#include "core/io/safetensors.h"
#include "core/models/config.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace mnemo {

inline constexpr const char* kCheckpointFormat = "mnemoscope-train-checkpoint";
inline constexpr int kCheckpointVersion = 1;

struct Checkpoint {
  io::NamedTensors tensors;                      // weights then optimizer state
  std::map<std::string, std::string> metadata;   // format, format_version, step, config, program_version
  int64_t step() const;                          // -1 when absent
};

// Writes atomically (a previous file at `path` survives a failure). Throws io::SafetensorsError.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);
// Throws io::SafetensorsError for an unreadable file, std::invalid_argument when the file
// is not a training checkpoint (no format metadata).
Checkpoint load_checkpoint(const std::string& path);

// The tensors that are model weights (everything but the "optim." names).
io::NamedTensors model_weights_only(const io::NamedTensors& tensors);

inline constexpr const char* kZooFormat = "mnemoscope-zoo-model";

// Any weights file: training checkpoint, zoo model, export-weights output or bare weights.
struct WeightsFile {
  std::string path;
  std::string kind;                              // "training checkpoint" | "zoo model" | "weights"
  io::NamedTensors weights;                      // model weights only ("optim." tensors dropped)
  std::map<std::string, std::string> metadata;
  nlohmann::json training_config;                // {model, task, train}; null when the file has none.
                                                 // task.segments is the curriculum's count at this step.
  nlohmann::json model_config;                   // the model part; null when the file names no config
  int64_t step = -1;                             // training step, -1 when absent
  bool has_model_config() const { return !model_config.is_null(); }
};

// `path` may also be a training session directory, its checkpoints/ folder, or the
// checkpoints/latest pointer: each means the checkpoint `latest` names (or, when that one is
// missing or corrupt, the newest that loads; resolve_checkpoint_path). Throws
// io::SafetensorsError for an unreadable file, InputError for a directory that is not a
// session, and ConfigError naming the file when its config metadata is not valid JSON.
WeightsFile read_weights_file(const std::string& path);
// Tokens per segment of the task `f` was trained on (core/models/stepping.h); 0 when the file
// records no training config or its task's segment length cannot be told.
int64_t trained_segment_len(const WeightsFile& f);
// Writes an export-weights file: `model`'s weights by module path, its config in metadata
// `model` (what read_weights_file reads back), plus `metadata`. Throws io::SafetensorsError.
void save_model_weights(const std::string& path, const torch::nn::Module& model, const ModelConfig& cfg,
                        std::map<std::string, std::string> metadata = {});
std::string resolve_checkpoint_path(const std::string& path);

// The fields in which two JSON configs differ, by dotted path, e.g.
// {"model.slots: 16 vs 8", "model.dim: 64 vs absent"} (a's value first). Objects are
// compared field by field, anything else as a whole.
std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::string& prefix = "");

// Loads f's weights into `model`, built from `cfg`. When they do not fit (load_weights'
// ConfigError) and the file names its model config, the ConfigError names the file and
// every differing field: "... was trained with another model config: model.slots: 16 in
// the checkpoint vs 8 in <cfg_source>; ...".
// `advice` ends that message (default: leave out --config or pass the training config).
void load_weights_checked(torch::nn::Module& model, const ModelConfig& cfg, const WeightsFile& f,
                          const std::string& cfg_source, const std::string& advice = "");

}  // namespace mnemo
