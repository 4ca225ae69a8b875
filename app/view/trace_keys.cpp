#include "app/view/trace_keys.h"

#include "core/trace/keys.h"

namespace mnemo::app {

// What the panels draw (and export): Memformer's writer, memory read and memory, the attention maps of
// the RMT / Transformer-XL / MTN families with RMT block masses, every hashed projection's
// buckets, and the MTN memory. A model traces only the keys it has.
std::vector<std::string> gui_trace_keys() {
  auto all = [](const char* prefix) { return std::string(prefix) + "*"; };
  // Not input.offsets nor memformer.slot_type: nothing in app/ reads them (the panels take the
  // slot types from the writer's self mass, app/figures/extract.cpp).
  return std::vector<std::string>({keys::kInputTokens, keys::kLmLoss, keys::kWriterAttn, all(keys::kReadAttnPrefix), keys::kDecoderRead, keys::kMemoryPrev,
                        keys::kMemory, keys::kForgetNorm, keys::kReadGate, all(keys::kRmtAttnPrefix),
                        all(keys::kRmtBlockMassPrefix), all(keys::kTrxlAttnPrefix), all(keys::kMtnJointAttnPrefix),
                        keys::kMtnBlocks, keys::kMtnImportance, keys::kMtnCandidateSource, keys::kMtnKeptSource,
                        keys::kMtnKeptIndex, keys::kMtnKeptImportance, keys::kMtnAge, keys::kQaAnswerProb, all(keys::kHashPrefix)});
}

}  // namespace mnemo::app
