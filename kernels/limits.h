// The limits of the hashed-lookup kernels (CPU reference and CUDA alike), in one place: the
// core validates configs against them (core/nn/hashed_linear.cpp, core/models/config.cpp)
// and the kernels assume them. tau = bits per chunk; a table has 2^tau rows, so 16 bits
// keep bucket ids in int32 with room and a table of d_out = 4096 fp32 columns at 1 GiB.
#pragma once

namespace mnemo::kernels {

inline constexpr int kMinHashBits = 1;
inline constexpr int kMaxHashBits = 16;

}  // namespace mnemo::kernels
