// The Memformer family's entry on the app's side (app/figures/families.h): which panels draw it,
// the trace keys its views draw and its extractor. Included by app/figures/families.cpp alone,
// whose make_view_families() lists memformer_view_family(), and by the extractor. Plain C++.
// (Its model, trace keys and core entry have not moved here yet: core/models/memformer.*,
// core/trace/keys.h, core/models/family.cpp.)
#pragma once
#include "app/figures/families.h"
#include "app/figures/step_data.h"
#include "core/trace/keys.h"

#include <string>

namespace mnemo::app {

// Fills StepData::memformer from the memformer.* keys. families/memformer/view/extract.cpp.
void extract_memformer_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model_kind);

// The writer panels: writer attention (and its memory read), slots, forgetting, memory.
inline ViewFamily memformer_view_family() {
  const std::string read_attn = std::string(keys::kReadAttnPrefix) + "*";
  ViewFamily f;
  f.family = "memformer";
  f.panels = PanelFamily::kMemformer;
  f.view_keys = {keys::kWriterAttn, read_attn,          keys::kDecoderRead, keys::kMemoryPrev,
                 keys::kMemory,     keys::kForgetNorm,  keys::kReadGate};
  f.extract = extract_memformer_step;
  return f;
}

}  // namespace mnemo::app
