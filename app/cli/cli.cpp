#include "app/cli/cli.h"

#include "core/platform/blas.h"
#include "core/platform/memory.h"
#include "viz/export.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace mnemo::app {

namespace {

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: "stpe" is one from "step".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known name nearest `word`, within a third of its length (1..3 edits); "" when none is.
std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  const size_t most = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::string best;
  size_t best_d = most + 1;
  for (const auto& n : names)
    if (const size_t d = edit_distance(word, n); d < best_d) {
      best = n;
      best_d = d;
    }
  return best;
}

// "; did you mean ...?" for a mistyped subcommand or long flag on the command line.
std::string did_you_mean(CLI::App& app, int argc, char** argv) {
  const auto all = app.get_subcommands([](CLI::App*) { return true; });
  std::vector<std::string> subs;
  CLI::App* sub = nullptr;
  for (CLI::App* a : all) {
    subs.push_back(a->get_name());
    if (a->parsed()) sub = a;
  }
  std::string hints;
  if (!sub && argc > 1 && argv[1][0] != '-' && std::find(subs.begin(), subs.end(), argv[1]) == subs.end())
    if (const std::string c = closest_name(argv[1], subs); !c.empty()) hints += "; did you mean '" + c + "'?";
  std::vector<std::string> flags;
  auto add_flags = [&](const CLI::App* a) {
    for (const CLI::Option* o : a->get_options())
      for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
  };
  add_flags(&app);
  for (CLI::App* a = sub; a; a = nullptr) {
    add_flags(a);
    for (CLI::App* g : a->get_subcommands([](CLI::App* x) { return x->parsed(); })) add_flags(g);
  }
  for (int i = 1; i < argc; ++i) {
    std::string w = argv[i];
    if (w.rfind("--", 0) != 0) continue;
    w = w.substr(0, w.find('='));
    if (std::find(flags.begin(), flags.end(), w) != flags.end()) continue;
    if (const std::string c = closest_name(w, flags); !c.empty()) hints += "; did you mean " + c + " (not " + w + ")?";
  }
  return hints;
}

}  // namespace

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
    err << "mnemoscope: error: " << e.what() << did_you_mean(app, argc, argv) << "\n"
        << "run 'mnemoscope --help' for usage\n";
    return 2;
  }
  try {
    if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + " must be >= 1 (0 = one per core)");
    // More threads than four per core only slows LibTorch down, and thousands exhaust the
    // process's limits before the first step.
    if (const int most = 4 * std::max(1, platform::cpu_cores()); threads > most)
      throw UsageError("--threads " + std::to_string(threads) + ": this machine has " +
                       std::to_string(platform::cpu_cores()) + " cores; use at most " + std::to_string(most) +
                       " (0 = one per core)");
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
