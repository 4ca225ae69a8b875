#include "app/cli/cli.h"

#include "core/platform/blas.h"
#include "core/platform/memory.h"
#include "viz/export.h"

#include <iostream>

namespace mnemo::app {

CLI::App* CommandGroup::add(CLI::App& parent) {
  CLI::App* g = parent.add_subcommand(name_, help_);
  g->require_subcommand(1);
  apps_.clear();
  for (auto& c : children_) apps_.push_back(c->add(*g));
  return g;
}

int CommandGroup::run(std::ostream& out) {
  for (size_t i = 0; i < children_.size(); ++i)
    if (apps_[i] && apps_[i]->parsed()) return children_[i]->run(out);
  throw UsageError(name_ + ": no subcommand given; run 'mnemoscope " + name_ + " --help'");
}

int run_cli(int argc, char** argv, CommandTable& table, std::ostream& out, std::ostream& err) {
  CLI::App app{"Mnemoscope: watch what memory-augmented transformers do with their memory"};
  app.require_subcommand(0, 1);
  // --threads anywhere on the line (subcommands pass unknown options up): intra-op threads of
  // LibTorch and of OpenBLAS (core/platform/blas.h); default_compute_threads() when not given.
  int threads = 0;
  app.fallthrough();
  CLI::Option* threads_opt = app.add_option(
      "--threads", threads, "CPU threads for LibTorch and OpenBLAS (default: $OMP_NUM_THREADS when set, else 1; 0 = one per core)");
  std::vector<CLI::App*> apps;
  for (auto& c : table.commands) apps.push_back(c->add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    err << "mnemoscope: error: " << e.what() << "\n" << "run 'mnemoscope --help' for usage\n";
    return 2;
  }
  try {
    if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + " must be >= 1 (0 = one per core)");
    platform::set_compute_threads(threads_opt->count() == 0 ? platform::default_compute_threads()
                                  : threads > 0             ? threads
                                                            : platform::cpu_cores());
    for (size_t i = 0; i < table.commands.size(); ++i)
      if (apps[i]->parsed()) return table.commands[i]->run(out);
    if (table.fallback) return table.fallback(out);
    out << app.help();
    return 0;
  } catch (const Error& e) {  // UsageError, ConfigError, InputError, FormatError, IoError, viz::ExportError
    err << "mnemoscope: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // An allocation that failed is the machine's limit, not a bug: name what needed how much.
    if (auto oom = platform::out_of_memory_message(e)) {
      err << "mnemoscope: error: " << *oom
          << "; free memory, or use a smaller model, batch, segment length or document\n";
      return 2;
    }
    err << "mnemoscope: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace mnemo::app
