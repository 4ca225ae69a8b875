// Element type of the hashed-lookup tables, shared by the CPU (kernels/hashed_lookup_cpu.h)
// and CUDA (kernels/hashed_lookup.cuh) kernels. bf16 and fp16 tables are widened to fp32 as
// they are read; every sum accumulates in fp32. Knows no LibTorch.
#pragma once

namespace mnemo::kernels {

enum class TableType : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };

}  // namespace mnemo::kernels
