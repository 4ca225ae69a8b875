// `mnemoscope export-weights`: a model's weights as safetensors, named by module path, with
// its config in the file's metadata (so `step`, `gui` and `eval` can load it alone).
#include "app/cli/flags.h"
#include "app/commands/commands.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"

namespace mnemo::app {

namespace {

class ExportWeightsCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("export-weights", "write a model's weights as safetensors (module-path names)");
    mf_.add_to(c);
    c->add_option("--out", out_, "output .safetensors file")->required();
    return c;
  }
  int run(std::ostream& out) override {
    ModelConfig cfg = mf_.resolve();
    if (is_dir(out_)) throw UsageError("--out '" + out_ + "' is a directory; pass a file name ending in .safetensors");
    MemoryModel m = mf_.build(cfg, out);
    try {
      save_model_weights(out_, *m, cfg, {{"seed", std::to_string(mf_.seed)}});
    } catch (const std::exception& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    out << "wrote " << named_weights(*m).size() << " tensors to " << out_ << "\n";
    return 0;
  }

 private:
  ModelFlags mf_;
  std::string out_;
};

}  // namespace

std::unique_ptr<Command> make_export_weights_command() { return std::make_unique<ExportWeightsCommand>(); }

}  // namespace mnemo::app
