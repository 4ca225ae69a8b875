// The model families (docs/architecture.md#adding-a-model): one entry per family holds its
// kinds with their capabilities (core/models/capabilities.h), its constructor, the trace keys
// its models emit and its provenance reader. ModelConfig::known_models(), make_model
// (core/models/factory.h), capabilities_of and the provenance functions
// (core/trace/provenance_trace.h) are all read from model_families(); nothing else lists the
// kinds. Plain C++ (the fuzzed config parser and the panels include it without LibTorch): the
// constructor and the reader are pointers to functions defined with their model.
#pragma once
#include "core/models/capabilities.h"
#include "core/trace/provenance.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo {

struct ModelConfig;
class MemoryModelImpl;
struct Trace;

// Builds the model of `cfg` (cfg.model is one of the family's kinds); cfg is valid.
using ModelConstructor = std::shared_ptr<MemoryModelImpl> (*)(const ModelConfig& cfg);
// One step's provenance record from its trace, or nullopt when the trace lacks the keys
// (core/trace/provenance_trace.h provenance_step_from_trace says what each reader computes).
using ProvenanceReader = std::optional<ProvenanceStep> (*)(const Trace& trace, int64_t segment, int64_t first_token,
                                                           int64_t length, int64_t padded_len);

struct ModelKindEntry {
  std::string model_kind;  // the config's model.model
  ModelCapabilities caps;
};

struct ModelFamily {
  std::string name;                  // "memformer", "decoder-lm", "mtn"
  std::vector<ModelKindEntry> kinds;
  ModelConstructor make = nullptr;   // null only in a build without LibTorch (fuzz/)
  // The trace keys its models emit (patterns: "prefix.*"), beside the ones every model emits
  // (common_trace_keys()). tests/core/test_capabilities.cpp traces every kind against this list.
  std::vector<std::string> trace_keys;
  // The provenance reader of its kinds whose caps.provenance is a chain (kWriterAttention,
  // kAttentionRollout), and the trace keys it needs at every step; null / empty when none is.
  ProvenanceReader provenance = nullptr;
  std::vector<std::string> provenance_keys;
};

// Every family, in the order the kinds are listed (ModelConfig::known_models()).
const std::vector<ModelFamily>& model_families();
// The family of a kind; throws std::invalid_argument naming the known kinds for another.
const ModelFamily& family_of(const std::string& model_kind);
// Whether a kind is registered (a recording's kind may be one this build does not know).
bool is_known_model(const std::string& model_kind);
// The keys every model emits whatever its family: the segment's tokens and their byte ranges,
// lm.loss; the Engine adds the memory-benefit losses and a hashed model its hash.* keys.
const std::vector<std::string>& common_trace_keys();

// The families' constructors and readers, defined with their models (LibTorch); a family in a
// folder of its own declares its constructor in its entry (families/mtn/core/family.h).
std::shared_ptr<MemoryModelImpl> make_memformer_model(const ModelConfig& cfg);  // core/models/memformer.cpp
std::shared_ptr<MemoryModelImpl> make_decoder_lm_model(const ModelConfig& cfg);  // core/models/decoder_lm.cpp
// core/trace/provenance_trace.cpp: the writer's rows (Memformer) and the attention rollout of
// rmt.attn.* at the write rows (RMT, Transformer-XL + RMT).
std::optional<ProvenanceStep> writer_provenance_step(const Trace& trace, int64_t segment, int64_t first_token,
                                                     int64_t length, int64_t padded_len);
std::optional<ProvenanceStep> rollout_provenance_step(const Trace& trace, int64_t segment, int64_t first_token,
                                                      int64_t length, int64_t padded_len);

}  // namespace mnemo
