// See core/platform/libstdcxx.h.
#include "core/platform/libstdcxx.h"

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <system_error>

namespace mnemo::platform {

std::string StdFilesystemBinding::summary() const {
  if (object.empty()) return "unknown";
  if (from_torch)
    return object + " -- LibTorch's copy (pytorch/pytorch#133437): file operations will crash; relink with "
                    "libstdc++.so.6 ahead of LibTorch (CMakeLists.txt does) or run with LD_PRELOAD=libstdc++.so.6";
  return object;
}

StdFilesystemBinding probe_std_filesystem() {
  StdFilesystemBinding b;
  // The address this translation unit calls: through the GOT, the definition the dynamic
  // linker bound (a non-PIE program may show its own PLT slot instead: then "the program").
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  const RemoveAll fn = static_cast<RemoveAll>(&std::filesystem::remove_all);
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>(fn), &where) == 0 || !where.dli_fname) return b;
  b.object = where.dli_fname[0] ? where.dli_fname : "the program itself";
  const std::string base = std::filesystem::path(b.object).filename().string();
  b.from_torch = base.rfind("libtorch", 0) == 0 || base.rfind("libc10", 0) == 0;
  return b;
}

}  // namespace mnemo::platform
