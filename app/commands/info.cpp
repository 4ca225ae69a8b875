// `mnemoscope info`: LibTorch version, CUDA, devices, threads, whether the app is built.
#include "app/commands/commands.h"
#include "kernels/device_info.h"

#include <torch/torch.h>

namespace mnemo::app {

namespace {

class InfoCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    return parent.add_subcommand("info", "LibTorch version, CUDA, devices and threads");
  }
  int run(std::ostream& out) override {
    out << "mnemoscope " << MNEMO_VERSION << "\n"
        << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH << "\n"
        << "LibTorch CUDA: " << (torch::cuda::is_available() ? "available" : "not available") << ", devices "
        << torch::cuda::device_count() << "\n"
        << "kernels: " << (kernels::built_with_cuda() ? "CUDA" : "CPU reference only (built without CUDA)")
        << ", CUDA runtime devices " << kernels::cuda_device_count() << "\n"
        << "CPU threads (intra-op): " << torch::get_num_threads() << "\n"
#ifdef MNEMO_WITH_GUI
        << "GUI: built\n";
#else
        << "GUI: not built (MNEMO_GUI=OFF)\n";
#endif
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace mnemo::app
