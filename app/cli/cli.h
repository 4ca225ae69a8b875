// app/cli — the command line's machinery: the parser, the command table, the flags several
// commands share (app/cli/flags.h) and the one lookup of shipped assets and configs
// (app/cli/assets.h). It knows no command: app/commands/ registers each subcommand into a
// CommandTable (one file per subcommand, one registration pattern), and main() hands the
// table to run_cli.
//
// Errors: every user-facing error is a mnemo::Error (core/errors.h); run_cli prints it as
// "mnemoscope: error: <what>" and returns exit code 2, having written nothing. UsageError —
// a problem with the command line itself (a flag's value, flags that do not go together) —
// is thrown only by code in app/cli/ and app/commands/. Anything else that escapes is an
// internal error (exit code 1).
#pragma once
#include "core/errors.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mnemo::app {

// A problem with what the user passed on the command line; exit code 2.
struct UsageError : Error {
  using Error::Error;
};

// One subcommand (or a group such as `bench`). add() declares it and its flags on `parent`
// and returns it; run() executes it once the command line has been parsed and it was chosen.
// Every check of user input happens before anything is written.
class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* add(CLI::App& parent) = 0;
  virtual int run(std::ostream& out) = 0;
};

// The commands of a program, in the order of `mnemoscope --help`. `fallback` runs when no
// subcommand is given (the demo).
struct CommandTable {
  std::vector<std::unique_ptr<Command>> commands;
  std::function<int(std::ostream&)> fallback;
};

// A group of subcommands under one name (e.g. `bench step`, `bench ui`): the group runs
// whichever child was chosen.
class CommandGroup : public Command {
 public:
  CommandGroup(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}
  void add_child(std::unique_ptr<Command> c) { children_.push_back(std::move(c)); }
  CLI::App* add(CLI::App& parent) override;
  int run(std::ostream& out) override;

 private:
  std::string name_, help_;
  std::vector<std::unique_ptr<Command>> children_;
  std::vector<CLI::App*> apps_;
};

// Parses argv against the table and runs the chosen command; returns the exit code (0,
// 1 internal error, 2 bad input).
int run_cli(int argc, char** argv, CommandTable& table, std::ostream& out, std::ostream& err);

}  // namespace mnemo::app
