// Builds a model from a config under a seed (same seed, same weights), and moves
// weights in and out by module path (safetensors names, docs/formats.md#sessions).
#pragma once
#include "core/models/config.h"
#include "core/models/model.h"

namespace mnemo {

MemoryModel make_model(const ModelConfig& cfg, uint64_t seed, torch::Device device = torch::kCPU);

// Refuses (ConfigError naming model.dim and the estimate) a model whose float32 weights, times
// `copies` (1 to run it; 4 to train it with Adam: weights, gradients and two moments), need
// more than this machine's memory: the kernel would kill the process before any
// out-of-memory message. make_model checks copies = 1; training checks 4.
void check_model_fits_memory(const ModelConfig& cfg, int copies);

// Parameters and buffers by module path ("encoder.0.self_attn.q.weight").
std::vector<std::pair<std::string, torch::Tensor>> named_weights(const torch::nn::Module& model);
// Copies `weights` into the model. Throws ConfigError naming the first missing or
// unexpected tensor or shape mismatch; the model is unchanged on error.
void load_weights(torch::nn::Module& model, const std::vector<std::pair<std::string, torch::Tensor>>& weights,
                  const std::string& source);

// A partial initialisation (`train --init-from W --init-matching`): the model's tensors filled
// from the file (`taken`), those left as they were (`fresh`: not in the file, or another
// shape there), and the file's tensors not used (`unused`), each in the model's or the file's
// order.
struct MatchedWeights {
  std::vector<std::string> taken, fresh, unused;
};
// Copies every tensor of `weights` whose name and shape are those of one of the model's (e.g.
// a Transformer-XL's layers into an RMT of the same size). Throws ConfigError, the model
// unchanged, when none matches.
MatchedWeights load_matching_weights(torch::nn::Module& model,
                                     const std::vector<std::pair<std::string, torch::Tensor>>& weights,
                                     const std::string& source);

}  // namespace mnemo
