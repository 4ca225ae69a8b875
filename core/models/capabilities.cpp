#include "core/models/capabilities.h"

#include <map>
#include <stdexcept>

namespace mnemo {

const ModelCapabilities& capabilities_of(const std::string& model_kind) {
  static const std::map<std::string, ModelCapabilities> table = [] {
    std::map<std::string, ModelCapabilities> t;
    ModelCapabilities memformer;
    memformer.next_segment = true;
    memformer.memory = MemoryKind::kSlots;
    memformer.provenance = ProvenanceKind::kWriterAttention;
    memformer.panels = PanelFamily::kMemformer;
    memformer.memory_state = "slots";
    t["memformer"] = memformer;

    ModelCapabilities rmt;
    rmt.memory = MemoryKind::kMemoryTokens;
    rmt.provenance = ProvenanceKind::kAttentionRollout;
    rmt.rmt_read_block = true;
    rmt.memory_state = "memory";
    t["rmt"] = rmt;

    ModelCapabilities write_only = rmt;
    write_only.provenance = ProvenanceKind::kNone;
    write_only.rmt_read_block = false;
    write_only.rmt_previous_write = true;
    write_only.rmt_title = "RMT (write only)";
    t["rmt-write-only"] = write_only;

    ModelCapabilities trxl;
    trxl.memory = MemoryKind::kCache;
    t["trxl"] = trxl;

    ModelCapabilities trxl_rmt = rmt;
    trxl_rmt.memory = MemoryKind::kCacheAndTokens;
    trxl_rmt.rmt_title = "Transformer-XL + RMT";
    t["trxl-rmt"] = trxl_rmt;

    t["transformer"] = ModelCapabilities{};

    ModelCapabilities mtn;
    mtn.memory = MemoryKind::kKeptTokens;
    mtn.provenance = ProvenanceKind::kKeptEntries;
    mtn.mtn_family = true;
    t["mtn"] = mtn;

    ModelCapabilities naive;
    naive.memory = MemoryKind::kLearnedVectors;
    naive.mtn_family = true;
    t["mtn-naive"] = naive;

    ModelCapabilities none;
    none.mtn_family = true;
    t["no-memory"] = none;
    return t;
  }();
  auto it = table.find(model_kind);
  if (it == table.end()) throw std::invalid_argument("unknown model kind '" + model_kind + "'");
  return it->second;
}

}  // namespace mnemo
