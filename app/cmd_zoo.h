// `mnemoscope zoo`: the shipped model zoo (core/train/zoo.h, docs/zoo/README.md).
//
//   zoo pack (--session DIR | --checkpoint F) --name NAME --summary "one line"
//            [--out assets/models/NAME.safetensors] [--card docs/zoo/NAME.md]
//     Writes the weights of a training checkpoint (the session's latest by default) with no
//     optimizer state and with the training config, summary and card path in the metadata;
//     refuses files over 4 MiB.
//   zoo list [--dir assets/models]
//     One line per zoo model: name, size, step, summary, and the command that evaluates it.
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace mnemo::app {

struct ZooCommand {
  CLI::App *cmd = nullptr, *pack = nullptr, *list = nullptr;
  std::string session, checkpoint, name, summary, out, card, dir;
};

void add_zoo_command(CLI::App& app, ZooCommand& c);
// -1 when the command was not selected; throws UsageError on bad input.
int run_zoo_command(const ZooCommand& c, std::ostream& out);

}  // namespace mnemo::app
