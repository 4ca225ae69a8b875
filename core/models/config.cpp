#include "core/models/config.h"

#include "core/io/json_file.h"

#include "kernels/limits.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace mnemo {

namespace {
// 0 -> "0", 0.25 -> "0.25" (std::to_string would print "0.000000").
std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void check_range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw ConfigError("config field '" + std::string(field) + "' = " + std::to_string(v) + " is out of range " +
                      std::to_string(lo) + ".." + std::to_string(hi));
}
}  // namespace

LossTarget loss_target_of(const std::string& model_kind) {
  return model_kind == "memformer" ? LossTarget::kNextSegment : LossTarget::kNextToken;
}

int64_t predicted_token(LossTarget target, int64_t segment, int64_t segment_len, int64_t j) {
  return target == LossTarget::kNextSegment ? (segment + 1) * segment_len + j : segment * segment_len + j + 1;
}

const char* loss_label(LossTarget target) {
  return target == LossTarget::kNextSegment ? "loss(next segment)" : "loss(next token)";
}

const std::vector<std::string>& ModelConfig::known_models() {
  static const std::vector<std::string> k = {"memformer", "rmt", "rmt-write-only", "trxl", "trxl-rmt",
                                             "transformer", "mtn", "mtn-naive", "no-memory"};
  return k;
}

void ModelConfig::validate() const {
  bool known = false;
  std::string list;
  for (const auto& m : known_models()) {
    known = known || m == model;
    list += (list.empty() ? "" : ", ") + m;
  }
  if (!known) throw ConfigError("config field 'model' = '" + model + "' is not a known model; known: " + list);
  check_range("slots", slots, 1, 65536);
  check_range("segment_len", segment_len, 1, 65536);
  check_range("dim", dim, 1, 65536);
  check_range("heads", heads, 1, 1024);
  if (dim % heads != 0)
    throw ConfigError("config field 'dim' = " + std::to_string(dim) + " must be divisible by 'heads' = " + std::to_string(heads));
  check_range("layers", layers, 1, 256);
  check_range("dec_layers", dec_layers, 1, 256);
  check_range("ff", ff, 0, 1 << 20);
  check_range("n_cls", n_cls, 0, 1024);
  if (!(temperature > 0.0) || temperature > 100.0)
    throw ConfigError("config field 'temperature' = " + number_text(temperature) + " must be in (0, 100]");
  if (memory_scale != "unit" && memory_scale != "sqrt_dim")
    throw ConfigError("config field 'memory_scale' = '" + memory_scale + "' must be \"unit\" or \"sqrt_dim\"");
  check_range("cache_len", cache_len, -1, 65536);
  check_range("n1_layers", n1_layers, 0, 256);
  check_range("n2_layers", n2_layers, 1, 256);
  if (linear != "dense" && linear != "hashed")
    throw ConfigError("config field 'linear' = '" + linear + "' must be \"dense\" or \"hashed\"");
  check_range("hash_bits", hash_bits, kernels::kMinHashBits, kernels::kMaxHashBits);
  if (!(hash_temperature > 0.0))
    throw ConfigError("config field 'hash_temperature' = " + number_text(hash_temperature) + " must be > 0");
}

nlohmann::json ModelConfig::to_json() const {
  return {{"model", model}, {"slots", slots}, {"segment_len", segment_len}, {"dim", dim},
          {"heads", heads}, {"layers", layers}, {"dec_layers", dec_layers}, {"ff", ff},
          {"n_cls", n_cls}, {"temperature", temperature}, {"forgetting", forgetting}, {"memory", memory}, {"memory_scale", memory_scale}, {"cache_len", cache_len},
          {"n1_layers", n1_layers}, {"n2_layers", n2_layers}, {"linear", linear}, {"hash_bits", hash_bits},
          {"hash_temperature", hash_temperature}};
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("model config must be a JSON object, got " + std::string(j.type_name()));
  ModelConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto need_int = [&](int64_t& dst) {
      if (!v.is_number_integer()) throw ConfigError("config field '" + k + "' must be an integer, got " + v.dump());
      dst = v.get<int64_t>();
    };
    if (k == "model") {
      if (!v.is_string()) throw ConfigError("config field 'model' must be a string, got " + v.dump());
      c.model = v.get<std::string>();
    } else if (k == "linear") {
      if (!v.is_string()) throw ConfigError("config field 'linear' must be a string, got " + v.dump());
      c.linear = v.get<std::string>();
    } else if (k == "memory_scale") {
      if (!v.is_string()) throw ConfigError("config field 'memory_scale' must be a string, got " + v.dump());
      c.memory_scale = v.get<std::string>();
    } else if (k == "hash_temperature") {
      if (!v.is_number()) throw ConfigError("config field 'hash_temperature' must be a number, got " + v.dump());
      c.hash_temperature = v.get<double>();
    } else if (k == "cache_len") need_int(c.cache_len);
    else if (k == "n1_layers") need_int(c.n1_layers);
    else if (k == "n2_layers") need_int(c.n2_layers);
    else if (k == "hash_bits") need_int(c.hash_bits);
    else if (k == "slots") need_int(c.slots);
    else if (k == "segment_len") need_int(c.segment_len);
    else if (k == "dim") need_int(c.dim);
    else if (k == "heads") need_int(c.heads);
    else if (k == "layers") need_int(c.layers);
    else if (k == "dec_layers") need_int(c.dec_layers);
    else if (k == "ff") need_int(c.ff);
    else if (k == "n_cls") need_int(c.n_cls);
    else if (k == "temperature") {
      if (!v.is_number()) throw ConfigError("config field 'temperature' must be a number, got " + v.dump());
      c.temperature = v.get<double>();
    } else if (k == "forgetting") {
      if (!v.is_boolean()) throw ConfigError("config field 'forgetting' must be true or false, got " + v.dump());
      c.forgetting = v.get<bool>();
    } else if (k == "memory") {
      if (!v.is_boolean()) throw ConfigError("config field 'memory' must be true or false, got " + v.dump());
      c.memory = v.get<bool>();
    } else {
      throw ConfigError("config field '" + k + "' is unknown; known fields: model, slots, segment_len, dim, heads, "
                        "layers, dec_layers, ff, n_cls, temperature, forgetting, memory, memory_scale, cache_len, n1_layers, n2_layers, "
                        "linear, hash_bits, hash_temperature");
    }
  }
  c.validate();
  return c;
}

ModelConfig ModelConfig::load(const std::string& path) {
  const nlohmann::json j = io::read_json_config(path);
  try {
    if (j.is_object() && j.contains("model") && j["model"].is_object()) return from_json(j["model"]);
    return from_json(j);
  } catch (const ConfigError& e) {
    throw ConfigError("config file '" + path + "': " + e.what());
  }
}

}  // namespace mnemo
