// `mnemoscope step`: steps a model through a document and writes, for each segment i in
// --from..--to, DIR/step-000i/trace.safetensors (the canonical trace keys, docs/formats.md)
// and the step's figures (app/figures/figures.h write_step_figures), plus DIR/manifest.json
// and, for hashed models, DIR/hash_stats.csv over the stepped segments.
#pragma once
#include "app/cli/flags.h"

#include <optional>
#include <ostream>
#include <string>

namespace mnemo::app {

struct StepOptions {
  std::string doc, out, format = "png,svg,csv";
  int64_t from = 0;
  std::optional<int64_t> to;  // default: from + 3 (clamped to the document)
  bool to_end = false;        // instead of `to`: through the document's last segment (the headless demo)
  bool force = false;         // clear a non-empty --out first (else it is refused)
  bool benefit = false;       // also each token's loss with the memory reset / zeroed (memory_benefit.*)
  bool by_slot = false;       // also each memory entry's effect on each predicted token (slot_effects.*)
};

// Validates everything, then steps and writes. Used by `step` and the headless demo.
// `last` (when given) gets the last segment stepped.
int run_step(const ModelFlags& mf, const StepOptions& so, std::ostream& log, int64_t* last = nullptr);

}  // namespace mnemo::app
