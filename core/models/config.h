// Model configuration shared by every model kind, read from JSON and CLI flags.
// Validation messages name the field and the allowed range (docs/formats.md#sessions); the
// fields are declared once, in ModelConfig::fields() (core/models/config.cpp, a table of
// core/io/config_fields.h), which reads, checks and writes them.
#pragma once
#include "core/errors.h"
#include "core/io/config_fields.h"
#include "core/nn/linear_options.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace mnemo {

// Model kinds: memformer | rmt | rmt-write-only | trxl | trxl-rmt | transformer (no-memory
// decoder-only baseline of the RMT paper) | mtn | mtn-naive | no-memory (MTN paper's baseline).
// Fields that a kind does not use are ignored by it.
struct ModelConfig {
  std::string model = "memformer";
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
  bool memory = true;          // Memformer: false = the "w/o memory" ablation (no reading, no writer;
                               // each step sees only its own segment; the state passes through)
  // Memformer: the scale at which the encoder and the writer see the unit-norm slots:
  // "unit" (the paper as written) or "sqrt_dim" (sqrt(d)·m, the scale of the LayerNorm'd
  // encoder outputs the writer mixes them with; docs/models.md#memformer "Memory scale").
  std::string memory_scale = "unit";
  // Memformer: each encoder layer's memory read enters through a learnt scalar gate tanh(g_l),
  // g_l = 0 at initialisation, so a model with a gate starts as its "w/o memory" twin and
  // the memory comes in only as far as training finds it worth (docs/models.md#memory-gate).
  bool memory_gate = false;
  int64_t cache_len = -1;      // cache length: trxl (-1 = slots, as files always read) and trxl-rmt (-1 = segment_len)
  int64_t n1_layers = 2;       // MTN: separate layers for chunk and memory
  int64_t n2_layers = 4;       // MTN: joint layers
  std::string linear = "dense";  // every Linear in attention and FFN: "dense" | "hashed"
  int64_t hash_bits = 8;       // MemoryFormer tau (bits per chunk), 1..16
  double hash_temperature = 1.0;  // MemoryFormer t in p(z)

  int64_t ff_width() const { return ff > 0 ? ff : 4 * dim; }
  // A lower bound on the model's parameters: its transformer layers' attention projections
  // and feed-forward weights as dense matrices (hashed tables are larger). Used to refuse a
  // model that cannot fit this machine's memory before allocating it.
  double parameter_lower_bound() const;
  // Whether `slots` means anything to this kind: false for the memoryless baselines
  // (transformer, no-memory), which ignore it.
  bool uses_slots() const { return model != "transformer" && model != "no-memory"; }
  // Projection options for attention and FFN Linears.
  LinearOptions linear_options() const { return {linear, hash_bits, hash_temperature}; }
  static const std::vector<std::string>& known_models();
  // The field table: one row per member above (its default is the member's initialiser).
  static const ConfigFields<ModelConfig>& fields();
  // The command-line flag that sets a field ("slots" or "model.slots" -> "--slots"); "" when
  // none does.
  static std::string flag_of(const std::string& field);
  // Throws ConfigError naming the first invalid field (field() without a "model." prefix).
  void validate() const;
  nlohmann::json to_json() const;
  // Unknown keys are rejected (a typo must not be silently ignored).
  static ModelConfig from_json(const nlohmann::json& j);
  // Reads a JSON file; the model config may be the whole file or its "model" object.
  static ModelConfig load(const std::string& path);
};

// Which document token a model kind's per-token loss predicts (the trace contract,
// docs/formats.md "lm.loss"): value j of segment s (L tokens per segment) is the loss of
// document token (s+1)L + j for a kind that predicts the next segment (Memformer's decoder),
// and of token sL + j + 1 for one that predicts the next token (every other kind; the last
// position predicts the next segment's first token).
enum class LossTarget { kNextToken, kNextSegment };
LossTarget loss_target_of(const std::string& model_kind);
// The document token value j of segment `segment`'s loss predicts (see LossTarget).
int64_t predicted_token(LossTarget target, int64_t segment, int64_t segment_len, int64_t j);
// How messages name a step's mean loss: "loss(next segment)" / "loss(next token)".
const char* loss_label(LossTarget target);

}  // namespace mnemo
