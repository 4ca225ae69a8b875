// The MTN family's entry in the core registry (core/models/family.h): the Memory Transformer
// Network and the MTN paper's two baselines (families/mtn/core/model.h), their capabilities,
// constructor and trace keys. Included by core/models/family.cpp alone, whose
// model_families() lists mtn_family(). Plain C++ (the fuzzed config parser compiles it without
// LibTorch, MNEMO_NO_TORCH, and then leaves the constructor out).
#pragma once
#include "core/models/family.h"
#include "families/mtn/core/keys.h"

#include <memory>
#include <string>

namespace mnemo {

// families/mtn/core/model.cpp
std::shared_ptr<MemoryModelImpl> make_mtn_model(const ModelConfig& cfg);

inline ModelFamily mtn_family() {
  ModelCapabilities mtn;
  mtn.architecture = Architecture::kMtn;
  mtn.mtn_family = true;
  mtn.memory = MemoryKind::kKeptTokens;
  mtn.provenance = ProvenanceKind::kKeptEntries;

  ModelCapabilities naive;
  naive.architecture = Architecture::kMtn;
  naive.mtn_family = true;
  naive.memory = MemoryKind::kLearnedVectors;

  ModelCapabilities none;
  none.architecture = Architecture::kMtn;
  none.mtn_family = true;

  ModelFamily f;
  f.name = "mtn";
  f.kinds = {{"mtn", mtn}, {"mtn-naive", naive}, {"no-memory", none}};
#ifdef MNEMO_NO_TORCH
  f.make = nullptr;
#else
  f.make = &make_mtn_model;
#endif
  const std::string joint_attn = std::string(keys::kMtnJointAttnPrefix) + "*";
  f.trace_keys = {keys::kMtnImportance,      keys::kMtnCandidateSource, keys::kMtnImportancePrev,
                  keys::kMtnKeptSource,      keys::kMtnKeptIndex,       keys::kMtnKeptImportance,
                  keys::kMtnAge,             keys::kMtnOutput,          joint_attn,
                  keys::kMtnBlocks,          keys::kQaAnswerProb,       keys::kQaLoss};
  return f;
}

}  // namespace mnemo
