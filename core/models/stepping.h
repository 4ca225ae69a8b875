// How a document is cut into segments for a model: the segment length the engine steps at,
// against the one the model's checkpoint was trained at (docs/architecture.md#stepping).
//
// A model's config holds its largest segment (`segment_len`: the positions it has
// embeddings or masks for); its training task may have cut every example shorter (the zoo's
// rmt-copy takes up to 37 tokens but was trained on segments of 13). A model runs as it was
// trained unless told otherwise: the app, `step`, `eval --doc` and tours step at the
// training length when the checkpoint records it, and label any other length.
#pragma once
#include "core/models/config.h"

#include <cstdint>
#include <string>

namespace mnemo {

struct Stepping {
  int64_t segment_len = 0;  // tokens per segment the engine steps
  int64_t trained_len = 0;  // tokens per segment of the checkpoint's training task; 0 = unknown
  int64_t model_len = 0;    // the model config's segment_len (the most it takes)
  bool requested = false;   // segment_len was asked for (a flag, a tour stop), not defaulted
  // True when the model is stepped as it was trained (or nothing says otherwise).
  bool as_trained() const { return trained_len == 0 || segment_len == trained_len; }
  // "segments of 13 tokens, as trained" / "segments of 37 tokens (trained on segments of 13:
  // this segmentation is one the model never saw)" / "segments of 32 tokens".
  std::string describe() const;
  // A warning for the user when !as_trained(), else "" (the caller adds how to step as trained).
  std::string warning() const;
};

// The stepping for `model` whose checkpoint was trained at `trained_len` (0 = unknown, or no
// checkpoint). requested == 0: the training length when known (and at most model.segment_len),
// else model.segment_len. requested > 0: that length; ConfigError naming the model's largest
// segment when requested is larger than model.segment_len, or below 1. `what` names the
// request in that message (e.g. "--segment-len").
Stepping choose_stepping(const ModelConfig& model, int64_t trained_len, int64_t requested = 0,
                         const std::string& what = "segment length");

}  // namespace mnemo
