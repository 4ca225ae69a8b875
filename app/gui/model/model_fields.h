// The model config fields the Model panel has no control for, as one line, so that the panel
// names every field the shown model uses (Apply keeps these as they are). Plain C++: tested
// without ImGui.
#pragma once
#include "core/models/config.h"

#include <string>

namespace mnemo::app {

// E.g. "ff 256; 1 cls token; memory read at scale unit; linear dense" for a Memformer,
// "ff 256; memory off: the \"w/o memory\" ablation (no read, no writer); linear dense" for
// its twin without memory. Only fields the kind uses appear.
std::string other_model_fields(const ModelConfig& cfg);

}  // namespace mnemo::app
