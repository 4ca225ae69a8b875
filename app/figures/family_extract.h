// Each model family's part of a step's StepData (app/figures/extract.cpp), named by its
// entry in app/figures/families.cpp: Memformer's writer, memory read and memory; the RMT /
// Transformer-XL attention maps; the MTN joint attention, kept tokens and QA answers.
// Declarations only: the definitions read tensors (LibTorch), this header does not.
#pragma once
#include "app/figures/step_data.h"

#include <string>

namespace mnemo {
struct Snapshot;
struct Document;
}  // namespace mnemo

namespace mnemo::app {

void extract_memformer_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model);
void extract_decoder_lm_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model);
// Fills the attention only when no other family's extractor did (a kind this build does not know).
void extract_mtn_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model);

}  // namespace mnemo::app
