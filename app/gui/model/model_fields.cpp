#include "app/gui/model/model_fields.h"

#include "core/models/capabilities.h"
#include "core/models/family.h"

#include <stdexcept>

#include <vector>

namespace mnemo::app {

std::vector<ModelFieldControl> model_field_controls(const std::string& model_kind) {
  const std::string shown_model_kind = is_known_model(model_kind) ? model_kind : std::string("memformer");
  const ModelCapabilities& caps = capabilities_of(shown_model_kind);
  const bool enc_dec = caps.architecture == Architecture::kEncoderDecoder;
  ModelConfig cfg;
  cfg.model = shown_model_kind;
  std::vector<const char*> names = {"slots", "segment_len", "heads", "dim", "layers"};
  if (enc_dec) names.insert(names.end(), {"dec_layers", "temperature", "forgetting"});
  const std::string unused = "not used by " + shown_model_kind +
                             (caps.mtn_family ? " (its layers are n1_layers / n2_layers in the config)" : "");
  std::vector<ModelFieldControl> out;
  for (const char* name : names) {
    ModelFieldControl c;
    c.row = ModelConfig::fields().find(name);
    if (!c.row) throw std::logic_error(std::string("model_field_controls: no row '") + name + "' in ModelConfig::fields()");
    c.label = c.row->name;
    for (char& ch : c.label) ch = ch == '_' ? ' ' : ch;
    const std::string n = name;
    c.used = !((n == "slots" && !cfg.uses_slots()) || (n == "layers" && caps.mtn_family));
    c.tip = c.used ? field_tip(*c.row) : unused;
    out.push_back(std::move(c));
  }
  return out;
}

std::string other_model_fields(const ModelConfig& cfg) {
  const ModelCapabilities& caps = capabilities_of(cfg.model);
  std::vector<std::string> parts;
  parts.push_back("ff " + std::to_string(cfg.ff_width()));
  if (caps.architecture == Architecture::kEncoderDecoder) {
    parts.push_back(std::to_string(cfg.n_cls) + (cfg.n_cls == 1 ? " cls token" : " cls tokens"));
    if (!cfg.memory) {
      parts.push_back("memory off: the \"w/o memory\" ablation (no read, no writer)");
    } else {
      parts.push_back("memory read at scale " + cfg.memory_scale +
                      (cfg.memory_gate ? ", through a learnt gate" : ""));
    }
  }
  // Transformer-XL's cache: its own field, cache_len, whose -1 means the slots field (as every
  // trxl file so far was read; core/models/config.h).
  if (caps.memory == MemoryKind::kCache)
    parts.push_back(cfg.cache_len < 0 ? "cache " + std::to_string(cfg.slots) + " (the slots field; cache_len -1)"
                                      : "cache " + std::to_string(cfg.cache_len) + " (cache_len; slots unused)");
  if (caps.memory == MemoryKind::kCacheAndTokens)
    parts.push_back("cache " + std::to_string(cfg.cache_len < 0 ? cfg.segment_len : cfg.cache_len));
  if (caps.mtn_family)
    parts.push_back("n1 layers " + std::to_string(cfg.n1_layers) + ", n2 layers " + std::to_string(cfg.n2_layers));
  if (cfg.linear == "hashed") {
    parts.push_back("linear hashed (" + std::to_string(cfg.hash_bits) + " bits a chunk, temperature " +
                    number_text(cfg.hash_temperature) + ")");
  } else {
    parts.push_back("linear " + cfg.linear);
  }
  std::string line;
  for (const std::string& p : parts) line += (line.empty() ? "" : "; ") + p;
  return line;
}

}  // namespace mnemo::app
