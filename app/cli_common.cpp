#include "app/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"

namespace mnemo::app {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

void check_out_dir(const std::string& out) {
  if (out.empty()) throw UsageError("--out: no output directory given");
  if (exists(out)) {
    if (!is_dir(out)) throw UsageError("--out '" + out + "' exists and is not a directory; pass a directory");
    if (::access(out.c_str(), W_OK | X_OK) != 0)
      throw UsageError("--out '" + out + "' is not writable; pass a writable directory");
    return;
  }
  std::string parent = out;
  while (!parent.empty() && parent.back() == '/') parent.pop_back();
  auto slash = parent.find_last_of('/');
  parent = slash == std::string::npos ? "." : (slash == 0 ? "/" : parent.substr(0, slash));
  while (!exists(parent)) {
    auto s = parent.find_last_of('/');
    parent = s == std::string::npos ? "." : (s == 0 ? "/" : parent.substr(0, s));
  }
  if (!is_dir(parent)) throw UsageError("--out '" + out + "' cannot be created: '" + parent + "' is not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw UsageError("--out '" + out + "' cannot be created: '" + parent + "' is not writable");
}

void make_dirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && !exists(cur) && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw UsageError("cannot create directory '" + cur + "': " + std::strerror(errno));
    }
    if (i < path.size()) cur.push_back(path[i]);
  }
}

void ModelFlags::add_to(CLI::App* c) {
  // A flag given twice takes its last value (handy for overriding a scripted command line).
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--config", config, "model config JSON (sessions/*.json)");
  o_model = c->add_option("--model", model,
                          "model kind: memformer, rmt, rmt-write-only, trxl, trxl-rmt, transformer, mtn, mtn-naive, no-memory");
  o_slots = c->add_option("--slots", slots, "memory size: Memformer slots (RMT memory tokens, MTN kept entries)");
  o_len = c->add_option("--segment-len", segment_len, "tokens per segment (1..65536)");
  o_heads = c->add_option("--heads", heads, "attention heads");
  o_layers = c->add_option("--layers", layers, "(encoder) layers");
  o_dec = c->add_option("--dec-layers", dec_layers, "decoder layers (Memformer)");
  o_dim = c->add_option("--dim", dim, "model width d");
  o_temp = c->add_option("--temperature", temperature, "Memformer writer temperature tau (> 0)");
  c->add_flag("--no-forgetting", no_forgetting, "Memformer without biased memory normalisation bias (ablation)");
  o_linear = c->add_option("--linear", linear, "every attention / FFN Linear: dense or hashed (MemoryFormer)");
  o_bits = c->add_option("--hash-bits", hash_bits, "MemoryFormer tau, bits per hashed chunk (1..16; dim must be a multiple)");
  c->add_option("--seed", seed, "seed of the random initialisation (default 0)");
  c->add_option("--checkpoint", checkpoint, "weights (.safetensors) from export-weights or training");
}

ModelConfig ModelFlags::resolve() const {
  ModelConfig cfg;
  if (!config.empty()) {
    try {
      cfg = ModelConfig::load(config);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--config: ") + e.what());
    }
  } else if (!checkpoint.empty()) {
    // No --config: the checkpoint's own config (core/train/checkpoint.h), else the defaults.
    try {
      WeightsFile f = read_weights_file(checkpoint);
      cfg = f.has_model_config() ? ModelConfig::from_json(f.model_config)
                                 : ModelConfig::from_json(nlohmann::json::parse(R"({})"));
    } catch (const io::SafetensorsError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
  } else {
    cfg = ModelConfig::from_json(nlohmann::json::parse(R"({})"));
  }
  auto range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
      throw UsageError(std::string(flag) + " " + std::to_string(v) + " is out of range " + std::to_string(lo) + ".." +
                       std::to_string(hi));
  };
  if (o_model && o_model->count()) {
    const auto& known = ModelConfig::known_models();
    if (std::find(known.begin(), known.end(), model) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw UsageError("--model '" + model + "' is not available; known models: " + list);
    }
    cfg.model = model;
  }
  if (o_slots && o_slots->count()) {
    range("--slots", slots, 1, 65536);
    cfg.slots = slots;
  }
  if (o_len && o_len->count()) {
    range("--segment-len", segment_len, 1, 65536);
    cfg.segment_len = segment_len;
  }
  if (o_heads && o_heads->count()) {
    range("--heads", heads, 1, 1024);
    cfg.heads = heads;
  }
  if (o_layers && o_layers->count()) {
    range("--layers", layers, 1, 256);
    cfg.layers = layers;
  }
  if (o_dec && o_dec->count()) {
    range("--dec-layers", dec_layers, 1, 256);
    cfg.dec_layers = dec_layers;
  }
  if (o_dim && o_dim->count()) {
    range("--dim", dim, 1, 65536);
    cfg.dim = dim;
  }
  if (o_temp && o_temp->count()) {
    if (!(temperature > 0.0) || temperature > 100.0)
      throw UsageError("--temperature " + std::to_string(temperature) + " must be > 0 (and <= 100)");
    cfg.temperature = temperature;
  }
  if (no_forgetting) cfg.forgetting = false;
  if (o_linear && o_linear->count()) {
    if (linear != "dense" && linear != "hashed")
      throw UsageError("--linear '" + linear + "' is not available; use dense or hashed");
    cfg.linear = linear;
  }
  if (o_bits && o_bits->count()) {
    range("--hash-bits", hash_bits, 1, 16);
    cfg.hash_bits = hash_bits;
  }
  if (cfg.dim % cfg.heads != 0)
    throw UsageError("--dim " + std::to_string(cfg.dim) + " must be divisible by --heads " + std::to_string(cfg.heads));
  try {
    cfg.validate();
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  return cfg;
}

MemoryModel ModelFlags::build(const ModelConfig& cfg, std::ostream& log) const {
  MemoryModel m;
  try {
    m = make_model(cfg, seed);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--model: ") + e.what());
  }
  if (!checkpoint.empty()) {
    try {
      // A training checkpoint also holds "optim." state, skipped; a file of another config
      // gets a message naming the differing fields.
      load_weights_checked(*m, cfg, read_weights_file(checkpoint), config.empty() ? "the flags" : config);
    } catch (const io::SafetensorsError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
    log << "model: " << cfg.model << " weights from " << checkpoint << "\n";
  } else {
    log << "model: " << cfg.model << " with no checkpoint: randomly initialised (seed " << seed
        << "); pass --checkpoint F for trained weights\n";
  }
  return m;
}

Document load_doc_flag(const std::string& path) {
  try {
    return load_document(path);
  } catch (const DocumentError& e) {
    throw UsageError(std::string("--doc: ") + e.what());
  }
}

}  // namespace mnemo::app
