// The MTN family's entry on the app's side (app/figures/families.h): which panels draw it,
// the trace keys its views draw and its extractor. Included by app/figures/families.cpp
// alone, whose make_view_families() lists mtn_view_family(), and by the extractor. Plain C++.
#pragma once
#include "app/figures/families.h"
#include "app/figures/step_data.h"
#include "families/mtn/core/keys.h"

#include <string>

namespace mnemo::app {

// Fills the attention only when no other family's extractor did (a kind this build does not
// know), and the MTN memory and QA answers (StepData::mtn). families/mtn/view/extract.cpp.
void extract_mtn_step(StepData& d, const Snapshot& snap, const Document& doc, const std::string& model_kind);

// The attention panel over the joint layers, the MTN memory panel, the QA answers.
inline ViewFamily mtn_view_family() {
  ViewFamily f;
  f.family = "mtn";
  f.view_keys = {std::string(keys::kMtnJointAttnPrefix) + "*", keys::kMtnBlocks,       keys::kMtnImportance,
                 keys::kMtnCandidateSource,                    keys::kMtnKeptSource,   keys::kMtnKeptIndex,
                 keys::kMtnKeptImportance,                     keys::kMtnAge,          keys::kQaAnswerProb};
  f.extract = extract_mtn_step;
  return f;
}

}  // namespace mnemo::app
