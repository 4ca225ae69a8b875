// The members of `mnemoscope bench` (app/bench/stats.h has what they measure with).
#pragma once
#include "app/cli/cli.h"

#include <memory>

namespace mnemo::app {

std::unique_ptr<Command> make_bench_step();                 // step: tracing off vs writer-only vs everything
std::unique_ptr<Command> make_bench_hashed_linear();        // hashed-linear: MemoryFormer layer vs dense Linear
std::unique_ptr<Command> make_bench_training_strategies();  // training-strategies: BPTT vs checkpointing vs MRBP
std::unique_ptr<Command> make_bench_recording();            // recording: training with session recording on vs off
std::unique_ptr<Command> make_bench_blas();                 // blas: the loaded BLAS vs the reference BLAS, one run
std::unique_ptr<Command> make_bench_distributed();          // distributed: data-parallel step and allreduce time, N = 1, 2
std::unique_ptr<Command> make_bench_train();                // train: training tokens/s of the text configs, vs PyTorch eager
std::unique_ptr<Command> make_bench_optimizer();            // optimizer: LibTorch AdamW step vs the fused one
std::unique_ptr<Command> make_bench_publish();              // publish: a view per step over a play-through, records shared vs copied
#ifdef MNEMO_WITH_GUI
std::unique_ptr<Command> make_bench_provenance();  // provenance: the chain's cost per step, on vs off
std::unique_ptr<Command> make_bench_ui();         // ui: frame times with every panel open (needs a display)
std::unique_ptr<Command> make_bench_dashboard();  // dashboard: the training dashboard with 4 x 10^6 points
#endif

}  // namespace mnemo::app
