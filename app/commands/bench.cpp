// `mnemoscope bench <name>`: the benchmarks of app/bench/, as one command group.
#include "app/bench/benches.h"
#include "app/commands/commands.h"

namespace mnemo::app {

std::unique_ptr<Command> make_bench_command() {
  auto g = std::make_unique<CommandGroup>("bench", "benchmarks (contender and baseline in one run, ratios printed)");
  g->add_child(make_bench_step());
  g->add_child(make_bench_hashed_linear());
  g->add_child(make_bench_training_strategies());
  g->add_child(make_bench_recording());
  g->add_child(make_bench_blas());
  g->add_child(make_bench_distributed());
  g->add_child(make_bench_train());
  g->add_child(make_bench_optimizer());
  g->add_child(make_bench_publish());
#ifdef MNEMO_WITH_GUI
  g->add_child(make_bench_provenance());
  g->add_child(make_bench_ui());
  g->add_child(make_bench_dashboard());
#endif
  return g;
}

}  // namespace mnemo::app
