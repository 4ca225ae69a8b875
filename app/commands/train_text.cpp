#include "app/commands/train_text.h"

#include "app/cli/assets.h"
#include "app/cli/cli.h"
#include "core/train/evaluate.h"
#include "core/train/metrics.h"

#include <algorithm>
#include <cstdio>

namespace mnemo::app {

void default_text_training(TrainOptions& c, std::ostream& out) {
  const std::string model = find_text_model();
  if (model.empty())
    throw UsageError(std::string("train --data without --config fine-tunes the zoo's text model (assets/models/") +
                     kTextModel + ".safetensors), which is not here; pass --random to train a Memformer from scratch "
                     "(sessions/text-memformer.json), or --config");
  c.config = find_session_config("text-finetune.json");
  c.init_from = model;
  out << "train --data: fine-tuning the zoo's text model " << kTextModel << " (" << kTextModelWhat
      << ") on your text, with made-up names mixed in so that its slots keep carrying words "
         "(sessions/text-finetune.json; --random trains from scratch instead)\n";
}

MemoryGain report_text_memory_gain(MemoryModelImpl& model, const TrainingConfig& cfg, int64_t max_windows,
                                   std::ostream& out) {
  MemoryGain g;
  if (model.initial_memory(1).empty() || !cfg.task.is_object() || cfg.task.value("name", std::string()) != "text")
    return g;
  TrainingConfig plain = cfg;
  for (const char* k : {"recur", "names", "doubled"}) plain.task[k] = 0;
  const auto task = plain.make_task();
  const int64_t batch = std::max<int64_t>(1, cfg.train.batch);
  const int64_t windows = std::min(task->split_size(Split::kTest), std::max<int64_t>(1, max_windows));
  const int64_t batches = (windows + batch - 1) / batch;
  PositionLosses with, reset;
  evaluate_model(model, *task, Split::kTest, batches, batch, false, 0, 1, &with);
  evaluate_model(model, *task, Split::kTest, batches, batch, false, 0, 1, &reset, true);
  g.measured = true;
  g.windows = std::min(windows, batches * batch);
  g.bits = with.bits_from_position(0);
  g.bits_reset = reset.bits_from_position(0);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "memory: on %lld held-out windows (the test split, curricula off) the memory saves %+.4f bits/byte "
                "against a reset to its initial state (%.4f carried, %.4f reset)\n",
                static_cast<long long>(g.windows), g.saves(), g.bits, g.bits_reset);
  out << buf;
  if (g.saves() <= 0)
    out << "warning: the memory saves nothing on this text: what it keeps from one segment is not used in the "
           "next. Try: more steps (--steps), the names curriculum that teaches slots to carry words "
           "(--set task.names=0.5, as `train --data PATH` without --config does), or starting from the zoo's text "
           "model (--init-from assets/models/" << kTextModel << ".safetensors); docs/training.md#text\n";
  return g;
}

}  // namespace mnemo::app
