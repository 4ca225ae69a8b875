// Provenance records from traces (docs/models.md#provenance): the LibTorch side of
// core/trace/provenance.h. The engine hands every step's trace here — also the steps a
// jump computes without the full trace — so the chain is exact after a jump.
#pragma once
#include "core/trace/provenance.h"
#include "core/trace/tracer.h"

#include <optional>
#include <string>
#include <vector>

namespace mnemo {

// Whether a model kind has a provenance chain built from its traces ("memformer", "rmt",
// "trxl-rmt"); MTN's kept entries carry their source token in the trace itself.
bool has_provenance_chain(const std::string& model_kind);
// The trace keys a chain needs at every step (empty for models without one).
std::vector<std::string> provenance_trace_keys(const std::string& model_kind);

// The record of one step, or nullopt when the trace lacks the keys. `length` real tokens
// of `padded_len` columns start at document token `first_token`.
//  * Memformer: memformer.writer_attn, mean over heads (self | tokens | cls).
//  * RMT, trxl-rmt: attention rollout (Abnar & Zuidema, docs/references.md#attention-rollout) of
//    rmt.attn.<l>, mean over heads, with the residual as 0.5·A + 0.5·I per layer, taken at
//    the write rows: the shares of the read and write columns (both carry the previous memory
//    M) are the carry, the token columns the source, and what a row of trxl-rmt spends on
//    the token cache (left out of rmt.attn) is "other".
std::optional<ProvenanceStep> provenance_step_from_trace(const Trace& trace, const std::string& model_kind,
                                                         int64_t segment, int64_t first_token, int64_t length,
                                                         int64_t padded_len);

}  // namespace mnemo
