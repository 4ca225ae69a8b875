// MemoryFormer hashed lookup on CUDA (MemoryFormer (docs/references.md#memoryformer) Eq. 12-14, docs/models.md#memoryformer, docs/architecture.md#conventions).
// One plain host function per operation: raw device pointers, sizes and a stream. The maths,
// layout and argument order are those of the CPU reference, kernels/hashed_lookup_cpu.h,
// which the tests compare against. Knows no LibTorch.
//
// Precision: x, y, p, dy, dx and every gradient buffer are fp32; tables may be fp32, bf16 or
// fp16 (TableType) and are widened to fp32 as they are read, so all sums accumulate in fp32.
// Table gradients are always written to an fp32 buffer (the caller casts it if it keeps
// bf16/fp16 tables).
//
// Errors: every CUDA call and kernel launch is checked; a failure throws std::runtime_error
// naming the call, the CUDA error, and kernels/hashed_lookup.cu:<line>. The functions are
// asynchronous on `stream` (except the workspace query, which touches no device).
// Preconditions (the caller validates; see core/nn/hashed_linear.h): all pointers on the
// current device, rows contiguous, n >= 0, k >= 1, kMinHashBits <= tau <= kMaxHashBits (kernels/limits.h), d_out >= 1,
// temperature > 0, k * 2^tau < 2^31.
#pragma once
#include "kernels/table_type.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mnemo::kernels {

// Forward (Eq. 13): bucket [n, k] int32, p [n, k] and y [n, d_out] are written.
// tables: [k, 2^tau, d_out] of `table_type`.
void hashed_lookup_forward_cuda(const float* x, const void* tables, TableType table_type, float* y, int32_t* bucket,
                                float* p, int64_t n, int64_t k, int tau, int64_t d_out, float temperature,
                                cudaStream_t stream);

// Table gradient (Eq. 14, first line) into the fp32 d_tables [k, 2^tau, d_out], which is
// overwritten (zeroed first).
//   deterministic = false: one atomicAdd per element and lookup; fast, but the order of the
//     fp32 additions (and so the last bits) can change from run to run.
//   deterministic = true: the (table, bucket) keys are stably radix-sorted, then every
//     bucket's rows are summed in row order in pieces of at most 256 rows and the pieces are
//     added in order; results are bit-identical run to run, also under skewed loads.
// workspace: device memory of at least hashed_lookup_backward_tables_workspace_cuda(...)
// bytes (0 in atomic mode; nullptr is then fine).
void hashed_lookup_backward_tables_cuda(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                        int64_t n, int64_t k, int tau, int64_t d_out, bool deterministic,
                                        void* workspace, size_t workspace_bytes, cudaStream_t stream);
size_t hashed_lookup_backward_tables_workspace_cuda(int64_t n, int64_t k, int tau, int64_t d_out, bool deterministic);

// Input gradient (Eq. 14, second line) into dx [n, k * tau] (overwritten). When
// d_tables_atomic is not null the same pass also adds p * dy into that fp32 [k, 2^tau, d_out]
// buffer with atomics (the caller zeroes it): the fused, non-deterministic backward.
void hashed_lookup_backward_input_cuda(const float* x, const void* tables, TableType table_type,
                                       const int32_t* bucket, const float* p, const float* dy, float* dx,
                                       float* d_tables_atomic, int64_t n, int64_t k, int tau, int64_t d_out,
                                       float temperature, cudaStream_t stream);

// Peak DRAM bandwidth of `device` in GB/s from its memory clock and bus width (0 when the
// driver does not report them). For benchmarks.
double cuda_peak_bandwidth_gbs(int device);

}  // namespace mnemo::kernels
