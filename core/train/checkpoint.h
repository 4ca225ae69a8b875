// Training checkpoints: one safetensors file (docs/formats.md#sessions) holding the model weights by module
// path, the AdamW state ("optim.<param>.exp_avg" / ".exp_avg_sq" / ".step"), and in the
// metadata the format, the step and the whole training config JSON. Written atomically.
// A checkpoint is also a weights file: `--checkpoint F` elsewhere skips the "optim." tensors.
#pragma once
#include "core/io/safetensors.h"

#include <map>
#include <string>

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

}  // namespace mnemo
