// Model configuration shared by every model kind, read from JSON and CLI flags.
// Validation messages name the field and the allowed range (DESIGN §4).
#pragma once
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace mnemo {

// A user-facing configuration problem; what() names the field, the value and the range.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ModelConfig {
  std::string model = "memformer";  // memformer (more kinds plug in later)
  int64_t slots = 16;          // memory size: Memformer slots (RMT memory tokens, MTN kept entries)
  int64_t segment_len = 32;    // tokens per segment L
  int64_t dim = 64;            // model width d
  int64_t heads = 4;
  int64_t layers = 2;          // encoder layers (Memformer) / layers
  int64_t dec_layers = 2;      // decoder layers (Memformer)
  int64_t ff = 0;              // feed-forward width; 0 = 4 * dim
  int64_t n_cls = 1;           // Memformer classification tokens appended to the encoder input
  double temperature = 0.25;   // Memformer writer temperature tau
  bool forgetting = true;      // Memformer biased memory normalisation with v_bias

  int64_t ff_width() const { return ff > 0 ? ff : 4 * dim; }
  // Throws ConfigError naming the first invalid field.
  void validate() const;
  nlohmann::json to_json() const;
  // Unknown keys are rejected (a typo must not be silently ignored).
  static ModelConfig from_json(const nlohmann::json& j);
  // Reads a JSON file; the model config may be the whole file or its "model" object.
  static ModelConfig load(const std::string& path);
};

}  // namespace mnemo
