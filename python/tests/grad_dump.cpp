// grad_dump CONFIG OUT [CONFIG OUT ...]: the C++ trainer's gradients for its first training batch,
// the reference python/tests/test_models.py compares mnemoscope.models' autograd against. Several
// pairs are answered by one process (one LibTorch start-up, ~0.8 CPU s, for all of them).
//
// Builds the model and task as `mnemoscope train --config CONFIG` does (a Trainer), draws the
// batch its first train_step draws, runs that step's rollout with the config's strategy and
// depth (core/train/rollout.h: bptt, checkpoint or mrbp), dropout off, and writes OUT (safetensors):
//   weight.<name>   the weights before the step (module paths, as export-weights names them)
//   grad.<name>     dJ/dθ of the rollout objective J = Σ loss_sum / Σ loss_count
//   <k>.tokens, <k>.valid, <k>.targets, <k>.target_valid, <k>.next_tokens, <k>.next_valid
//                   segment k of the batch (those the task defines)
// metadata: "model" (the model config JSON), "loss" (J, %.17g), "strategy", "task_head"
// (language_model | answer_tagging) and "class_weights" (other, answer) of the task's head,
// "freeze_from" (the segment from which the memory is read but not updated; -1 never).
// Exit 0 on success, 2 with a message on stderr otherwise.
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/rollout.h"
#include "core/train/trainer.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

using namespace mnemo;

namespace {

void dump(const std::string& config, const std::string& path) {
  const TrainingConfig cfg = TrainingConfig::load(config);
  Trainer t(cfg);
  MemoryModel model = t.model();
  io::NamedTensors out;
  for (auto& [name, w] : named_weights(*model)) out.emplace_back("weight." + name, w.detach().clone());

  const int64_t b = cfg.train.batch;
  std::vector<int64_t> idx(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) idx[static_cast<size_t>(i)] = i;  // step 0's batch (Trainer::train_step)
  const TaskBatch tb = t.task().batch(Split::kTrain, idx, torch::kCPU);
  for (size_t k = 0; k < tb.segments.size(); ++k)
    for (auto& t : named_segment_tensors(tb.segments[k], std::to_string(k) + ".")) out.push_back(std::move(t));

  // Dropout off (the MTN family's, the only models with dropout): the two sides' random draws
  // differ, and the comparison is of the computation. Every other model is the same in both modes.
  model->eval();
  model->zero_grad();
  RolloutOptions ro;
  ro.depth = cfg.train.bptt_depth;
  ro.strategy = parse_strategy(cfg.train.strategy);
  ro.freeze_from = tb.memory_frozen_from;
  const RolloutResult r = run_rollout(*model, tb.segments, model->initial_memory(b), ro);
  for (const auto& p : model->named_parameters(true))
    if (p.value().grad().defined()) out.emplace_back("grad." + p.key(), p.value().grad().detach().clone());

  char loss[64], weights[96];
  std::snprintf(loss, sizeof loss, "%.17g", r.loss);
  const TaskHead head = t.task().head();  // what the Trainer set on the model
  std::snprintf(weights, sizeof weights, "%.17g %.17g", head.other_weight, head.answer_weight);
  io::save_safetensors(path, out,
                       {{"model", cfg.model.to_json().dump()},
                        {"loss", loss},
                        {"strategy", cfg.train.strategy},
                        {"task_head", head.kind == TaskHead::Kind::kAnswerTagging ? "answer_tagging" : "language_model"},
                        {"class_weights", weights},
                        {"freeze_from", std::to_string(tb.memory_frozen_from)}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 != 1) {
    std::cerr << "usage: grad_dump CONFIG OUT.safetensors [CONFIG OUT.safetensors ...]\n";
    return 2;
  }
  torch::set_num_threads(1);
  for (int i = 1; i < argc; i += 2) {
    try {
      dump(argv[i], argv[i + 1]);
    } catch (const std::exception& e) {
      std::cerr << "grad_dump " << argv[i] << ": " << e.what() << "\n";
      return 2;
    }
  }
  return 0;
}
