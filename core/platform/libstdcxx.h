// Which shared object this program's std::filesystem calls land in.
//
// PyTorch's pip wheels (2.5 and later) export the std::filesystem functions of the libstdc++
// they link statically (pytorch/pytorch#133437). A program whose own calls bind to those
// copies crashes in them (seen with LibTorch 2.11 on the GPU machine: every test that removes
// a directory). The top-level CMakeLists.txt links libstdc++.so.6 ahead of LibTorch so the
// system's copy wins (docs/architecture.md#build); this probe says whether it did, so that
// `mnemoscope info` and a test can name the problem instead of a segmentation fault.
// Linux/glibc (dladdr); elsewhere it reports "unknown".
#pragma once
#include <string>

namespace mnemo::platform {

struct StdFilesystemBinding {
  std::string object;       // path of the object defining std::filesystem::remove_all as called here
  bool from_torch = false;  // that object is a LibTorch library: the crash above
  // One line for `mnemoscope info`.
  std::string summary() const;
};

// Never throws.
StdFilesystemBinding probe_std_filesystem();

}  // namespace mnemo::platform
