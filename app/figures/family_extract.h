// The decoder-only family's part of a step's StepData (app/figures/extract.cpp), named by its
// entry in app/figures/families.cpp: the RMT / Transformer-XL attention maps. (A family in a
// folder of its own declares its extractor in its entry: families/memformer/view/entry.h,
// families/mtn/view/entry.h.)
// Declarations only: the definitions read tensors (LibTorch), this header does not.
#pragma once
#include "app/figures/step_data.h"

#include <string>

namespace mnemo {
struct Snapshot;
struct Document;
}  // namespace mnemo

namespace mnemo::app {

void extract_decoder_lm_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model_kind);

}  // namespace mnemo::app
