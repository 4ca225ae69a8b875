// What `train` adds for text tasks (docs/training.md#text): the default of `train --data PATH`
// without a config (fine-tune the zoo's text model with the curriculum its memory needs), and
// the closing line on what the trained memory saves against a reset on the held-out text.
#pragma once
#include "app/commands/train.h"
#include "core/models/model.h"
#include "core/train/train_config.h"

#include <ostream>

namespace mnemo::app {

// The config `train --data PATH` takes when neither --config, --resume nor --random is given:
// sessions/text-finetune.json, starting from the zoo's text model (--init-from). Fills
// c.config and c.init_from; UsageError when the zoo's text model or the config is missing
// (naming --random, which trains from scratch).
void default_text_training(TrainOptions& c, std::ostream& out);

// After a text task's training: the held-out text (the test split with every curriculum off:
// task.recur, task.names and task.doubled at 0) scored with the memory carried across each
// window and reset to the initial memory at every segment, up to `max_windows` windows; prints
// what the memory saves in bits per byte, and a warning naming what to try when that is not
// above 0. Nothing for a model without memory or a task that is not "text".
struct MemoryGain {
  bool measured = false;
  int64_t windows = 0;
  double bits = 0, bits_reset = 0;
  double saves() const { return bits_reset - bits; }
};
MemoryGain report_text_memory_gain(MemoryModelImpl& model, const TrainingConfig& cfg, int64_t max_windows,
                                   std::ostream& out);

}  // namespace mnemo::app
