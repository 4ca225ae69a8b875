// `mnemoscope info`: LibTorch version, CUDA, devices, threads, the BLAS the process loaded
// (warning with the fix when it is the reference BLAS), whether the app is built;
// `--config-schema`: the config field tables as JSON (core/train/train_config.h config_schema).
#include "app/commands/commands.h"
#include "core/dist/process_group.h"
#include "core/nn/torch_compat.h"
#include "core/platform/blas.h"
#include "core/platform/libstdcxx.h"
#include "core/train/train_config.h"
#include "kernels/device_info.h"

#include <torch/torch.h>

namespace mnemo::app {

namespace {

class InfoCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("info", "LibTorch version, CUDA, devices and threads");
    c->add_flag("--config-schema", schema_,
                "print every config field (model, train, task: kind, range, default, flag, help) as JSON and exit; "
                "python/mnemoscope/config_schema.json is this output");
    return c;
  }
  int run(std::ostream& out) override {
    if (schema_) {
      out << config_schema().dump(1) << "\n";
      return 0;
    }
    const platform::BlasInfo blas = platform::probe_blas();
    const platform::StdFilesystemBinding fs = platform::probe_std_filesystem();
    bool threads_env = false;
    const int default_threads = platform::default_compute_threads(&threads_env);
    out << "mnemoscope " << MNEMO_VERSION << "\n"
        << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH << "\n"
        << "LibTorch CUDA: " << (torch::cuda::is_available() ? "available" : "not available") << ", devices "
        << cuda_devices() << "\n"
        << "kernels: " << (kernels::built_with_cuda() ? "CUDA" : "CPU reference only (built without CUDA)")
        << ", CUDA runtime devices " << kernels::cuda_device_count() << "\n"
        << "CPU threads (intra-op): " << torch::get_num_threads() << " of " << platform::cpu_cores()
        << " cores (--threads N; default " << default_threads
        << (threads_env ? ", from OMP_NUM_THREADS" : ", as OMP_NUM_THREADS is not set") << ")\n"
        << "BLAS: " << blas.summary() << "\n"
        << "std::filesystem: " << fs.summary() << "\n"
        << "distributed (c10d): gloo " << (dist::has_gloo() ? "yes" : "no (no Gloo headers at build time)") << ", nccl "
        << (dist::has_nccl() ? "yes" : "no (needs LibTorch with CUDA and nccl.h)") << "\n"
#ifdef MNEMO_WITH_GUI
        << "GUI: built\n";
#else
        << "GUI: not built (MNEMO_GUI=OFF)\n";
#endif
    if (fs.from_torch) out << "warning: std::filesystem calls go to LibTorch's copy; see the line above\n";
    if (blas.is_reference())
      out << "warning: the reference BLAS is slow (tens of times slower matrix products than OpenBLAS); "
          << platform::reference_blas_fix() << "\n";
    return 0;
  }

 private:
  bool schema_ = false;
};

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace mnemo::app
