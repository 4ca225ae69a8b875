// From an engine Snapshot (LibTorch tensors) to the plain arrays every figure and panel
// draws (app/figures/step_data.h). The only place in app/figures/ that reads tensors; it
// runs on the worker thread (the app) or in the command (`mnemoscope step`).
#pragma once
#include "app/figures/step_data.h"
#include "core/data/document.h"
#include "app/figures/slot_effects.h"
#include "core/engine/doc_score.h"
#include "core/engine/engine.h"
#include "core/trace/hash_stats.h"

#include <string>

namespace mnemo::app {

// Extracts a step's arrays; keys missing from the trace leave their arrays empty. `model_kind` is
// the config's model kind: it names the attention blocks and says which tokens lm.loss
// predicts (core/models/config.h LossTarget). Live stepping, replay, the gallery, `step` and
// `export` all come through here (then segment_record_of for what is kept of the step).
StepData make_step_data(const Snapshot& snap, const Document& doc, const std::string& model_kind);

// One segment's slot ablation (core/engine/doc_score.h) as plain data for figures and panels.
SlotEffects slot_effects_data(const SegmentEntryEffects& fx, const MemoryEntries& entries);

// The hashed projections of a trace (hash.* keys), or of bucket counts added over steps.
HashData hash_data_of(const Trace& trace);
HashData hash_data_of(const HashStatsAccumulator& acc);

}  // namespace mnemo::app
