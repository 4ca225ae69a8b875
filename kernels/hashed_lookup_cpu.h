// MemoryFormer hashed lookup (MemoryFormer (docs/references.md#memoryformer) Eq. 12-14, docs/models.md#memoryformer): the CPU
// reference. Same operations and argument order as kernels/hashed_lookup.cuh, with a
// ParallelFor in place of the CUDA stream. Knows no LibTorch (docs/architecture.md#layers).
//
// Layout (all row-major, contiguous):
//   x       [n, k * tau]        input rows; chunk z_j of row r is x[r, j*tau .. j*tau+tau)
//   tables  [k, 2^tau, d_out]   T_j = tables[j]
//   bucket  [n, k] int32        h(z_j) = sum_i [z_ji >= 0] * 2^i   (zero and -0 count as positive)
//   p       [n, k]              p(z_j) = prod_i 1 / (1 + exp(-2 |z_ji| / t))
//   y, dy   [n, d_out]          y_r = sum_j p(z_j) * T_j[h(z_j)], summed in the order j = 0..k-1
//   dx      [n, k * tau]        dL/dz_ji = (dy_r . T_j[h]) * p * (1 - s_ji) * (2/t) * sign(z_ji),
//                               s_ji = 1 / (1 + exp(-2 |z_ji| / t)), sign(0) = +1 (matches h)
//   d_tables[k, 2^tau, d_out]   dT_j[b] = sum over rows r with h(z_j) = b of p(z_j) * dy_r,
//                               summed in row order (so the result is deterministic)
// Sizes: n >= 0, k >= 1, kMinHashBits <= tau <= kMaxHashBits (kernels/limits.h), d_out >= 1, temperature > 0 (not checked here: the
// caller validates; see core/nn/hashed_linear.h).
#pragma once
#include <cstdint>
#include <functional>

namespace mnemo::kernels {

// Runs body(begin, end) over disjoint ranges that cover [0, n), each at least `grain` long
// (but the last), possibly on several threads at once. An empty ParallelFor runs body(0, n)
// on the calling thread. core passes one built on at::parallel_for.
using ParallelFor = std::function<void(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body)>;

// Forward (Eq. 13): fills bucket, p and y. Float inputs use a vectorisable exp with a
// relative error below 2e-7; double inputs use std::exp.
void hashed_lookup_forward_cpu(const float* x, const float* tables, float* y, int32_t* bucket, float* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf);
void hashed_lookup_forward_cpu(const double* x, const double* tables, double* y, int32_t* bucket, double* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf);

// Table gradient (Eq. 14, first line): overwrites d_tables. Each (table group, column block)
// is owned by one task and rows are added in order, so the result is bit-identical for any
// thread count.
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf);
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const double* p, const double* dy, double* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf);

// Input gradient (Eq. 14, second line): overwrites dx.
void hashed_lookup_backward_input_cpu(const float* x, const float* tables, const int32_t* bucket, const float* p,
                                      const float* dy, float* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf);
void hashed_lookup_backward_input_cpu(const double* x, const double* tables, const int32_t* bucket, const double* p,
                                      const double* dy, double* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf);

}  // namespace mnemo::kernels
