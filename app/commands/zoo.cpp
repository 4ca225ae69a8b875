// `mnemoscope zoo`: the shipped model zoo (core/train/zoo.h, docs/zoo/README.md).
//
//   zoo pack (--session DIR | --checkpoint F) --name NAME --summary "one line"
//            [--out assets/models/NAME.safetensors] [--card docs/zoo/NAME.md] [--set key=value ...]
//     Writes the weights of a training checkpoint (the session's latest by default) with no
//     optimizer state and with the training config (edited by --set, recorded), summary and
//     card path in the metadata; refuses files over 4 MiB.
//   zoo list [--dir assets/models]
//     One line per zoo model: name, size, step, summary, and the command that evaluates it.
#include "app/cli/assets.h"
#include "app/cli/flags.h"
#include "app/commands/commands.h"
#include "core/io/session.h"
#include "core/train/zoo.h"

#include <sys/stat.h>

#include <cstdio>

namespace mnemo::app {

namespace {

class ZooPack : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("pack", "write a checkpoint's weights + config as a zoo model (no optimizer state)");
    c->add_option("--session", session_, "training session directory (its latest checkpoint)");
    c->add_option("--checkpoint", checkpoint_, "a training checkpoint instead of --session");
    c->add_option("--name", name_, "model name: a-z, 0-9, '-'")->required();
    c->add_option("--summary", summary_, "one-line summary (the model picker shows it)")->required();
    c->add_option("--out", out_, "output file (default assets/models/NAME.safetensors)");
    c->add_option("--card", card_, "the model's card (default docs/zoo/NAME.md)");
    c->add_option("--set", sets_,
                  "edit the packed config, recorded in the metadata (repeatable): e.g. --set task.corpus=sotu "
                  "--set task.split=null for a model trained on a made corpus and evaluated on sotu");
    return c;
  }
  int run(std::ostream& out) override {
    if (session_.empty() == checkpoint_.empty())
      throw UsageError("zoo pack: pass exactly one of --session DIR and --checkpoint F");
    std::string ckpt = checkpoint_;
    if (!session_.empty()) {
      std::optional<io::LoadedCheckpoint> latest;
      try {
        latest = io::Session::open(session_, 3, io::SessionAccess::kReadOnly).load_latest();
      } catch (const Error& e) {
        throw UsageError(std::string("--session: ") + e.what());
      }
      if (!latest) throw UsageError("--session '" + session_ + "' has no checkpoint yet");
      ckpt = latest->path;
    }
    const std::string dest = out_.empty() ? "assets/models/" + name_ + ".safetensors" : out_;
    const std::string card = card_.empty() ? "docs/zoo/" + name_ + ".md" : card_;
    struct stat st {};
    if (::stat(dest.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw UsageError("--out '" + dest + "' is a directory; pass a file name ending in .safetensors");
    std::vector<std::pair<std::string, std::string>> sets;
    for (const auto& s : sets_) sets.push_back(split_set_flag(s));
    ZooEntry e;
    try {
      e = pack_zoo_model(ckpt, dest, name_, summary_, card, sets);
    } catch (const io::SafetensorsError& err) {
      throw UsageError(std::string("zoo pack: ") + err.what());
    } catch (const ConfigError& err) {
      throw UsageError(std::string("zoo pack: ") + err.what());
    }
    out << "wrote " << dest << " (" << e.bytes << " bytes, step " << e.step << ", from " << ckpt << ")\n";
    if (!e.training_text_note.empty()) out << e.training_text_note << "\n";
    out
        << "evaluate it with: mnemoscope eval --checkpoint " << dest << " --split test\n";
    return 0;
  }

 private:
  std::string session_, checkpoint_, name_, summary_, out_, card_;
  std::vector<std::string> sets_;
};

class ZooList : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("list", "list the zoo models of a directory");
    c->add_option("--dir", dir_, "directory (default the project's assets/models)");
    return c;
  }
  int run(std::ostream& out) override {
    std::string dir = dir_;
    if (dir.empty()) {
      try {
        dir = find_asset("models");
      } catch (const Error&) {
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

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<Command> make_zoo_command() {
  auto g = std::make_unique<CommandGroup>("zoo", "the shipped model zoo: pack a trained checkpoint, list the models");
  g->add_child(std::make_unique<ZooPack>());
  g->add_child(std::make_unique<ZooList>());
  return g;
}

}  // namespace mnemo::app
