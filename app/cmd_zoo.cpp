#include "app/cmd_zoo.h"

#include "app/cli.h"
#include "app/cli_common.h"
#include "core/io/session.h"
#include "core/train/zoo.h"

#include <cstdio>

namespace mnemo::app {

void add_zoo_command(CLI::App& app, ZooCommand& c) {
  c.cmd = app.add_subcommand("zoo", "the shipped model zoo: pack a trained checkpoint, list the models");
  c.cmd->require_subcommand(1);
  c.pack = c.cmd->add_subcommand("pack", "write a checkpoint's weights + config as a zoo model (no optimizer state)");
  c.pack->add_option("--session", c.session, "training session directory (its latest checkpoint)");
  c.pack->add_option("--checkpoint", c.checkpoint, "a training checkpoint instead of --session");
  c.pack->add_option("--name", c.name, "model name: a-z, 0-9, '-'")->required();
  c.pack->add_option("--summary", c.summary, "one-line summary (the model picker shows it)")->required();
  c.pack->add_option("--out", c.out, "output file (default assets/models/NAME.safetensors)");
  c.pack->add_option("--card", c.card, "the model's card (default docs/zoo/NAME.md)");
  c.list = c.cmd->add_subcommand("list", "list the zoo models of a directory");
  c.list->add_option("--dir", c.dir, "directory (default the project's assets/models)");
}

int run_zoo_command(const ZooCommand& c, std::ostream& out) {
  if (!c.cmd || !*c.cmd) return -1;
  if (*c.pack) {
    if (c.session.empty() == c.checkpoint.empty())
      throw UsageError("zoo pack: pass exactly one of --session DIR and --checkpoint F");
    std::string ckpt = c.checkpoint;
    if (!c.session.empty()) {
      try {
        auto latest = io::Session::open(c.session, 3, io::SessionAccess::kReadOnly).load_latest();
        if (!latest) throw UsageError("--session '" + c.session + "' has no checkpoint yet");
        ckpt = latest->path;
      } catch (const io::SessionError& e) {
        throw UsageError(std::string("--session: ") + e.what());
      }
    }
    const std::string dest = c.out.empty() ? "assets/models/" + c.name + ".safetensors" : c.out;
    const std::string card = c.card.empty() ? "docs/zoo/" + c.name + ".md" : c.card;
    if (is_dir(dest)) throw UsageError("--out '" + dest + "' is a directory; pass a file name ending in .safetensors");
    ZooEntry e;
    try {
      e = pack_zoo_model(ckpt, dest, c.name, c.summary, card);
    } catch (const ConfigError& err) {
      throw UsageError(std::string("zoo pack: ") + err.what());
    } catch (const io::SafetensorsError& err) {
      throw UsageError(std::string("zoo pack: ") + err.what());
    }
    out << "wrote " << dest << " (" << e.bytes << " bytes, step " << e.step << ", from " << ckpt << ")\n"
        << "evaluate it with: mnemoscope eval --checkpoint " << dest << " --split test\n";
    return 0;
  }
  if (*c.list) {
    std::string dir = c.dir;
    if (dir.empty()) {
      try {
        dir = find_asset("models");
      } catch (const UsageError&) {
        out << "no zoo directory (assets/models) found\n";
        return 0;
      }
    }
    const auto entries = list_zoo(dir);
    if (entries.empty()) out << "no zoo models in " << dir << "\n";
    for (const auto& e : entries) {
      char size[32];
      std::snprintf(size, sizeof size, "%.2f MB", static_cast<double>(e.bytes) / 1e6);
      out << e.name << "  (" << size << ", step " << e.step << ")  " << e.summary << "\n"
          << "    card " << e.card << "; mnemoscope eval --checkpoint " << e.path << " --split test\n";
    }
    return 0;
  }
  return -1;
}

}  // namespace mnemo::app
