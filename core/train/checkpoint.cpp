#include "core/train/checkpoint.h"

#include "core/train/optim.h"

#include <stdexcept>

namespace mnemo {

int64_t Checkpoint::step() const {
  auto it = metadata.find("step");
  if (it == metadata.end()) return -1;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return -1;
  }
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  auto meta = ckpt.metadata;
  meta["format"] = kCheckpointFormat;
  meta["format_version"] = std::to_string(kCheckpointVersion);
  io::save_safetensors(path, ckpt.tensors, meta);
}

Checkpoint load_checkpoint(const std::string& path) {
  Checkpoint c;
  c.tensors = io::load_safetensors(path, &c.metadata);
  auto it = c.metadata.find("format");
  if (it == c.metadata.end() || it->second != kCheckpointFormat)
    throw std::invalid_argument("'" + path + "' is not a training checkpoint (no '" + kCheckpointFormat +
                                "' metadata); a weights-only file can be passed as --checkpoint to step/eval");
  return c;
}

io::NamedTensors model_weights_only(const io::NamedTensors& tensors) {
  io::NamedTensors out;
  const std::string pre = kOptimPrefix;
  for (const auto& [name, t] : tensors)
    if (name.compare(0, pre.size(), pre) != 0) out.emplace_back(name, t);
  return out;
}

}  // namespace mnemo
