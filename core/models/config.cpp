#include "core/models/config.h"

#include "core/io/json_file.h"
#include "core/models/family.h"

#include "kernels/limits.h"

#include <algorithm>
#include <limits>

namespace mnemo {

LossTarget loss_target_of(const std::string& model_kind) {
  // The capability table says it; a kind this build does not know (a recording's, "") is
  // read as predicting the next token.
  if (!is_known_model(model_kind)) return LossTarget::kNextToken;
  return capabilities_of(model_kind).next_segment ? LossTarget::kNextSegment : LossTarget::kNextToken;
}

int64_t predicted_token(LossTarget target, int64_t segment, int64_t segment_len, int64_t j) {
  return target == LossTarget::kNextSegment ? (segment + 1) * segment_len + j : segment * segment_len + j + 1;
}

const char* loss_label(LossTarget target) {
  return target == LossTarget::kNextSegment ? "loss(next segment)" : "loss(next token)";
}

const std::vector<std::string>& ModelConfig::known_models() {
  // The families' kinds, in their order (core/models/family.h).
  static const std::vector<std::string> k = [] {
    std::vector<std::string> out;
    for (const ModelFamily& f : model_families())
      for (const ModelKindEntry& e : f.kinds) out.push_back(e.model_kind);
    return out;
  }();
  return k;
}

const ConfigFields<ModelConfig>& ModelConfig::fields() {
  using M = ModelConfig;
  const double inf = std::numeric_limits<double>::infinity();
  static const ConfigFields<ModelConfig> table(
      "", {string_field("model", &M::model, known_models(), "model kind: " + join_names(known_models()), "--model"),
           int_field("slots", &M::slots, 1, 65536,
                     "memory size: Memformer slots k, RMT memory tokens, Transformer-XL's cache while cache_len is -1, "
                     "MTN kept entries",
                     "--slots"),
           int_field("segment_len", &M::segment_len, 1, 65536, "tokens per segment", "--segment-len"),
           int_field("dim", &M::dim, 1, 65536, "model width d", "--dim"),
           int_field("heads", &M::heads, 1, 1024, "attention heads (dim must be a multiple)", "--heads"),
           int_field("layers", &M::layers, 1, 256, "(encoder) layers", "--layers"),
           int_field("dec_layers", &M::dec_layers, 1, 256, "decoder layers (Memformer)", "--dec-layers"),
           int_field("ff", &M::ff, 0, 1 << 20, "feed-forward width; 0 = 4 * dim"),
           int_field("n_cls", &M::n_cls, 0, 1024, "Memformer classification tokens appended to the encoder input"),
           real_field("temperature", &M::temperature, {0.0, 100.0, true, false},
                      "Memformer writer temperature tau: small = sharper writer attention", "--temperature"),
           bool_field("forgetting", &M::forgetting, "Memformer biased memory normalisation with v_bias",
                      "--no-forgetting"),
           bool_field("memory", &M::memory, "Memformer: false = the \"w/o memory\" ablation"),
           string_field("memory_scale", &M::memory_scale, {"unit", "sqrt_dim"},
                        "Memformer: the scale at which the encoder and the writer see the slots"),
           bool_field("memory_gate", &M::memory_gate,
                      "Memformer: the memory read enters each encoder layer through tanh(g), g = 0 at start"),
           int_field("cache_len", &M::cache_len, -1, 65536,
                     "cache length in token states: trxl (-1 = slots), trxl-rmt (-1 = segment_len)", "--cache-len"),
           int_field("n1_layers", &M::n1_layers, 0, 256, "MTN: separate layers for chunk and memory"),
           int_field("n2_layers", &M::n2_layers, 1, 256, "MTN: joint layers"),
           string_field("linear", &M::linear, {"dense", "hashed"},
                        "every attention / FFN Linear: dense or hashed (MemoryFormer)", "--linear"),
           int_field("hash_bits", &M::hash_bits, kernels::kMinHashBits, kernels::kMaxHashBits,
                     "MemoryFormer tau, bits per hashed chunk (dim must be a multiple)", "--hash-bits"),
           real_field("hash_temperature", &M::hash_temperature, {0.0, inf, true, true}, "MemoryFormer t in p(z)")});
  return table;
}

std::string ModelConfig::flag_of(const std::string& field) {
  const std::string pre = "model.";
  const std::string name = field.compare(0, pre.size(), pre) == 0 ? field.substr(pre.size()) : field;
  const auto* f = fields().find(name);
  return f ? f->flag : std::string();
}

double ModelConfig::parameter_lower_bound() const {
  const double d = static_cast<double>(dim);
  const double per_layer = 4.0 * d * d + 2.0 * d * static_cast<double>(ff_width());
  double n_layers = static_cast<double>(layers);
  const Architecture a = is_known_model(model) ? capabilities_of(model).architecture : Architecture::kDecoderOnly;
  if (a == Architecture::kEncoderDecoder) n_layers += static_cast<double>(dec_layers);
  if (a == Architecture::kMtn) n_layers = static_cast<double>(n1_layers + n2_layers);
  return n_layers * per_layer;
}

void ModelConfig::validate() const {
  fields().validate(*this);
  if (dim % heads != 0)
    throw field_error("dim", "= " + std::to_string(dim) + " must be divisible by 'heads' = " + std::to_string(heads));
}

nlohmann::json ModelConfig::to_json() const { return fields().to_json(*this); }

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("model config must be a JSON object, got " + std::string(j.type_name()));
  ModelConfig c;
  fields().read(c, j);
  c.validate();
  return c;
}

ModelConfig ModelConfig::load(const std::string& path) {
  const nlohmann::json j = io::read_json_config(path);
  try {
    if (j.is_object() && j.contains("model") && j["model"].is_object()) return from_json(j["model"]);
    return from_json(j);
  } catch (const ConfigError& e) {
    throw error_in("config file '" + path + "': ", e);
  }
}

}  // namespace mnemo
