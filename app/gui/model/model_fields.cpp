#include "app/gui/model/model_fields.h"

#include "core/models/capabilities.h"

#include <vector>

namespace mnemo::app {

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
