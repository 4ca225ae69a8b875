// The model families' entries (core/models/family.h). A family in a folder of its own
// (families/<name>/) is its folder's entry, included below, and one name in model_families()
// (docs/architecture.md#adding-a-model); Memformer and the decoder-only family have theirs here.
#include "core/models/family.h"

#include "core/trace/keys.h"
// The families in folders of their own (families/<name>/core/family.h), one include each.
#include "families/mtn/core/family.h"

#include <stdexcept>

// The fuzz build (fuzz/CMakeLists.txt) compiles the config parser without LibTorch: it parses
// and checks kinds but builds no model, so there the constructors and readers are left out.
#ifdef MNEMO_NO_TORCH
#define MNEMO_TORCH_FN(f) nullptr
#else
#define MNEMO_TORCH_FN(f) &f
#endif

namespace mnemo {

namespace {

std::string all(const char* prefix) { return std::string(prefix) + "*"; }

ModelFamily memformer_family() {
  ModelCapabilities c;
  c.next_segment = true;
  c.architecture = Architecture::kEncoderDecoder;
  c.memory = MemoryKind::kSlots;
  c.provenance = ProvenanceKind::kWriterAttention;
  c.memory_state = "slots";
  ModelFamily f;
  f.name = "memformer";
  f.kinds = {{"memformer", c}};
  f.make = MNEMO_TORCH_FN(make_memformer_model);
  f.trace_keys = {keys::kWriterAttn,  all(keys::kReadAttnPrefix), keys::kMemoryPrev, keys::kMemory,
                  keys::kForgetNorm,  keys::kSlotType,            keys::kEncoderOut, all(keys::kCrossAttnPrefix),
                  keys::kDecoderRead, keys::kReadGate};
  f.provenance = MNEMO_TORCH_FN(writer_provenance_step);
  f.provenance_keys = {keys::kWriterAttn};
  return f;
}

// RMT, Transformer-XL, both together and the plain transformer: one decoder stack
// (core/models/decoder_lm.h) whose memory the capabilities choose.
ModelFamily decoder_lm_family() {
  ModelCapabilities rmt;
  rmt.architecture = Architecture::kDecoderOnly;
  rmt.memory = MemoryKind::kMemoryTokens;
  rmt.provenance = ProvenanceKind::kAttentionRollout;
  rmt.rmt_read_block = true;
  rmt.memory_state = "memory";

  ModelCapabilities write_only = rmt;
  write_only.provenance = ProvenanceKind::kNone;
  write_only.rmt_read_block = false;
  write_only.rmt_previous_write = true;

  ModelCapabilities trxl;
  trxl.architecture = Architecture::kDecoderOnly;
  trxl.memory = MemoryKind::kCache;

  ModelCapabilities trxl_rmt = rmt;
  trxl_rmt.memory = MemoryKind::kCacheAndTokens;

  ModelCapabilities transformer;
  transformer.architecture = Architecture::kDecoderOnly;

  ModelFamily f;
  f.name = "decoder-lm";
  f.kinds = {{"rmt", rmt}, {"rmt-write-only", write_only}, {"trxl", trxl}, {"trxl-rmt", trxl_rmt},
             {"transformer", transformer}};
  f.make = MNEMO_TORCH_FN(make_decoder_lm_model);
  f.trace_keys = {all(keys::kRmtAttnPrefix), all(keys::kRmtBlockMassPrefix), keys::kRmtMemoryPrev, keys::kRmtMemory,
                  all(keys::kTrxlAttnPrefix)};
  f.provenance = MNEMO_TORCH_FN(rollout_provenance_step);
  f.provenance_keys = {all(keys::kRmtAttnPrefix)};
  return f;
}

const ModelKindEntry* find_kind(const std::string& model_kind, const ModelFamily** family) {
  for (const ModelFamily& f : model_families())
    for (const ModelKindEntry& k : f.kinds)
      if (k.model_kind == model_kind) {
        if (family) *family = &f;
        return &k;
      }
  return nullptr;
}

[[noreturn]] void unknown_kind(const std::string& model_kind) {
  std::string known;
  for (const ModelFamily& f : model_families())
    for (const ModelKindEntry& k : f.kinds) known += (known.empty() ? "" : ", ") + k.model_kind;
  throw std::invalid_argument("unknown model kind '" + model_kind + "'; the known kinds are " + known);
}

}  // namespace

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {memformer_family(), decoder_lm_family(), mtn_family()};
  return families;
}

const ModelFamily& family_of(const std::string& model_kind) {
  const ModelFamily* f = nullptr;
  if (!find_kind(model_kind, &f)) unknown_kind(model_kind);
  return *f;
}

bool is_known_model(const std::string& model_kind) { return find_kind(model_kind, nullptr) != nullptr; }

const ModelCapabilities& capabilities_of(const std::string& model_kind) {
  const ModelKindEntry* k = find_kind(model_kind, nullptr);
  if (!k) unknown_kind(model_kind);
  return k->caps;
}

const std::vector<std::string>& common_trace_keys() {
  static const std::vector<std::string> k = {keys::kInputTokens,        keys::kInputOffsets, keys::kLmLoss,
                                             keys::kLmLossMemoryReset, keys::kLmLossMemoryZeroed,
                                             std::string(keys::kHashPrefix) + "*"};
  return k;
}

}  // namespace mnemo
