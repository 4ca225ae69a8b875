#include "kernels/device_info.h"

#ifdef MNEMO_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mnemo::kernels {

bool built_with_cuda() {
#ifdef MNEMO_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef MNEMO_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
#else
  return 0;
#endif
}

}  // namespace mnemo::kernels
