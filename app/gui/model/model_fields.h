// The model config fields the Model panel has no control for, as one line, so that the panel
// names every field the shown model uses (Apply keeps these as they are). Plain C++: tested
// without ImGui.
#pragma once
#include "core/models/config.h"

#include <string>
#include <vector>

namespace mnemo::app {

// One field the Model panel edits, read from ModelConfig::fields(): the row (its member, range
// and help), the label shown (the JSON name with spaces: "segment len"), whether the shown
// model kind uses it (else it is greyed out) and its tooltip: field_tip(row) (the help and the
// range, core/io/config_fields.h), or why the kind does not use it.
struct ModelFieldControl {
  const ConfigField<ModelConfig>* row = nullptr;
  std::string label;
  bool used = true;
  std::string tip;
};

// The fields the panel shows for `model_kind`, in the panel's order: slots, segment_len, heads,
// dim, layers, and for an encoder-decoder (Memformer) dec_layers, temperature and forgetting
// too (another family never reads those). An unknown kind: the Memformer's list.
std::vector<ModelFieldControl> model_field_controls(const std::string& model_kind);

// E.g. "ff 256; 1 cls token; memory read at scale unit; linear dense" for a Memformer,
// "ff 256; memory off: the \"w/o memory\" ablation (no read, no writer); linear dense" for
// its twin without memory. Only fields the kind uses appear.
std::string other_model_fields(const ModelConfig& cfg);

}  // namespace mnemo::app
