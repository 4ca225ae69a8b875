// What the kernels library was built with. Knows no LibTorch (docs/architecture.md#layers).
#pragma once

namespace mnemo::kernels {

// True when kernels/*.cu were compiled (MNEMO_CUDA resolved ON at configure time).
bool built_with_cuda();
// CUDA devices visible to the CUDA runtime; 0 when built without CUDA or none present.
int cuda_device_count();

}  // namespace mnemo::kernels
