// Builds a model from a config under a seed (same seed, same weights), and moves
// weights in and out by module path (safetensors names, docs/formats.md#sessions).
#pragma once
#include "core/models/config.h"
#include "core/models/model.h"

namespace mnemo {

MemoryModel make_model(const ModelConfig& cfg, uint64_t seed, torch::Device device = torch::kCPU);

// Parameters and buffers by module path ("encoder.0.self_attn.q.weight").
std::vector<std::pair<std::string, torch::Tensor>> named_weights(const torch::nn::Module& model);
// Copies `weights` into the model. Throws ConfigError naming the first missing or
// unexpected tensor or shape mismatch; the model is unchanged on error.
void load_weights(torch::nn::Module& model, const std::vector<std::pair<std::string, torch::Tensor>>& weights,
                  const std::string& source);

}  // namespace mnemo
