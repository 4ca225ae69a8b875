// MemoryFormer hashed lookup (MemoryFormer (docs/references.md#memoryformer) Eq. 12-14,
// docs/models.md#memoryformer): the CPU kernels (design and measurements: docs/benchmarks.md,
// "bench hashed-linear"). Same operations and argument order as
// kernels/hashed_lookup.cuh, with a ParallelFor in place of the CUDA stream. Knows no
// LibTorch (docs/architecture.md#layers).
//
// Layout (all row-major, contiguous):
//   x       [n, k * tau]        input rows; chunk z_j of row r is x[r, j*tau .. j*tau+tau)
//   tables  [k, 2^tau, d_out]   T_j = tables[j]
//   bucket  [n, k] int32        h(z_j) = sum_i [z_ji >= 0] * 2^i   (zero and -0 count as positive)
//   p       [n, k]              p(z_j) = prod_i 1 / (1 + exp(-2 |z_ji| / t)), the product taken
//                               in the order i = 0..tau-1
//   y, dy   [n, d_out]          y_r = sum_j p(z_j) * T_j[h(z_j)], summed in the order j = 0..k-1
//   dx      [n, k * tau]        dL/dz_ji = (dy_r . T_j[h]) * p * (1 - s_ji) * (2/t) * sign(z_ji),
//                               s_ji = 1 / (1 + exp(-2 |z_ji| / t)), sign(0) = +1 (matches h)
//   d_tables[k, 2^tau, d_out]   dT_j[b] = sum over rows r with h(z_j) = b of p(z_j) * dy_r,
//                               summed in row order (so the result is deterministic)
// Sizes: 0 <= n < 2^31, k >= 1, kMinHashBits <= tau <= kMaxHashBits (kernels/limits.h),
// d_out >= 1, temperature > 0 (not checked here: the caller validates; see
// core/nn/hashed_linear.h).
//
// Code paths (float only; double always runs the portable one). The sums above are taken in
// the stated order in every path; the paths differ only in rounding:
//   kAvx512, kAvx2  hand-vectorised (16 float lanes: one zmm, or two ymm), with fused
//                   multiply-adds. The two give bit-identical results: every sum, including
//                   the lane reduction of the dot products dy . T_j[h], uses the same tree.
//   kPortable       plain C++ loops (the compiler vectorises what it can for the baseline
//                   x86-64 / the build's target), separate multiply and add.
// The widest path the CPU supports is chosen at the first call (CPUID); the environment
// variable MNEMO_CPU_KERNELS=portable|avx2|avx512 or set_cpu_isa() overrides it.
#pragma once
#include "kernels/table_type.h"

#include <cstdint>
#include <functional>
#include <string>

namespace mnemo::kernels {

// Runs body(begin, end) over disjoint ranges that cover [0, n), each at least `grain` long
// (but the last), possibly on several threads at once. An empty ParallelFor runs body(0, n)
// on the calling thread. core passes one built on at::parallel_for.
using ParallelFor = std::function<void(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body)>;

enum class CpuIsa : int { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

// "portable", "avx2" or "avx512".
const char* cpu_isa_name(CpuIsa isa);
// Parses a name of cpu_isa_name; throws std::invalid_argument naming the accepted values.
CpuIsa parse_cpu_isa(const std::string& name);
// Whether this build and this CPU can run `isa` (kAvx2 needs AVX2, FMA and F16C; kAvx512
// needs AVX-512 F; both need an x86-64 GCC or Clang build).
bool cpu_isa_supported(CpuIsa isa);
// The widest supported path.
CpuIsa cpu_isa_best();
// The path float calls take: set_cpu_isa's choice, else MNEMO_CPU_KERNELS (read once, at the
// first call; an unknown or unsupported value throws std::invalid_argument from that call),
// else cpu_isa_best().
CpuIsa cpu_isa();
// Selects the path for later calls (all threads). Throws std::invalid_argument when the CPU or
// the build cannot run it.
void set_cpu_isa(CpuIsa isa);

// Forward (Eq. 13): fills bucket, p and y. exp() of float inputs is a polynomial with a
// relative error below 2e-7 in every path; double inputs use std::exp. Float calls take
// tables of any TableType (bf16 and fp16 are widened to fp32 as read: half the bytes moved);
// the overload without a type reads fp32 tables.
void hashed_lookup_forward_cpu(const float* x, const void* tables, TableType table_type, float* y, int32_t* bucket,
                               float* p, int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                               const ParallelFor& pf);
void hashed_lookup_forward_cpu(const float* x, const float* tables, float* y, int32_t* bucket, float* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf);
void hashed_lookup_forward_cpu(const double* x, const double* tables, double* y, int32_t* bucket, double* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf);

// Table gradient (Eq. 14, first line): overwrites d_tables. Every element is summed over its
// rows in row order by one task, so the result is bit-identical for any thread count.
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf);
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const double* p, const double* dy, double* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf);

// Input gradient (Eq. 14, second line): overwrites dx. Each row is computed by one task in a
// fixed order, so the result is bit-identical for any thread count. The table gradient does
// not read the tables, so it has no TableType: for bf16/fp16 tables it is computed in fp32.
void hashed_lookup_backward_input_cpu(const float* x, const void* tables, TableType table_type, const int32_t* bucket,
                                      const float* p, const float* dy, float* dx, int64_t n, int64_t k, int tau,
                                      int64_t d_out, double temperature, const ParallelFor& pf);
void hashed_lookup_backward_input_cpu(const float* x, const float* tables, const int32_t* bucket, const float* p,
                                      const float* dy, float* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf);
void hashed_lookup_backward_input_cpu(const double* x, const double* tables, const int32_t* bucket, const double* p,
                                      const double* dy, double* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf);

// ---- tables kept in the kernels' layout -------------------------------------------------------
//
// The vectorised forward and input gradient read the tables as "slabs": for each column block
// of kHashedPackCols columns, each table's 2^tau rows of that block, contiguous. Unless they
// are given the tables already in that layout, every call packs them again (docs/benchmarks.md,
// "bench hashed-linear": at d = 512, tau = 8 that is 32 MiB read from DRAM in short runs, about
// half the fp32 forward). Tables that do not change between calls can be packed once:
//
//   packed  [blocks, k, 2^tau, kHashedPackCols], blocks = ceil(d_out / kHashedPackCols):
//           the piece (b, j, h) holds columns b * kHashedPackCols + l of T_j[h], zeros past
//           d_out. fp32 and fp16 pieces are the columns in order; a bf16 piece is 16 32-bit
//           words, word l = (column l + 16) << 16 | column l (as 16-bit elements: column l at
//           2 l, column l + 16 at 2 l + 1), so that it widens with a shift and a mask.
//
// The layout is the same for every code path. The *_packed calls compute exactly (bit for
// bit) what the same call on the unpacked tables computes on the same path.
constexpr int64_t kHashedPackCols = 32;
// Elements (of the tables' type) of the packed layout.
int64_t hashed_packed_elems(int64_t k, int tau, int64_t d_out);
// Packs tables [k, 2^tau, d_out] into `packed` (hashed_packed_elems elements of table_type).
void hashed_pack_tables_cpu(const void* tables, TableType table_type, void* packed, int64_t k, int tau, int64_t d_out,
                            const ParallelFor& pf);
// hashed_lookup_forward_cpu / hashed_lookup_backward_input_cpu with the tables given packed.
void hashed_lookup_forward_packed_cpu(const float* x, const void* packed, TableType table_type, float* y,
                                      int32_t* bucket, float* p, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf);
void hashed_lookup_backward_input_packed_cpu(const float* x, const void* packed, TableType table_type,
                                             const int32_t* bucket, const float* p, const float* dy, float* dx,
                                             int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                                             const ParallelFor& pf);

// Where a single-threaded packed forward spends its time, in seconds of the calling thread's CPU
// time, added to by hashed_lookup_forward_packed_cpu's overload below (for benchmarks:
// kernels/tools/hashed_counts.cpp, docs/benchmarks.md). codes: bucket and p, and their
// reshuffle by row block; fetch: reading each group's slabs from memory before its gathers;
// gathers: the multiply-adds of the table pieces, with the partial sums between groups and the
// writes of y. On the portable path nothing is added.
struct HashedForwardPhases {
  double codes = 0, fetch = 0, gathers = 0;
};
void hashed_lookup_forward_packed_cpu(const float* x, const void* packed, TableType table_type, float* y,
                                      int32_t* bucket, float* p, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, HashedForwardPhases& phases);

// The rate (GB/s) at which the forward's inner loop multiply-adds table pieces that are
// already in L2 (packed slabs of 16 tables of 2^8 rows, 2048 rows, random codes; best of five
// runs taking about `seconds` of the calling thread's CPU time, with the current path): the
// ceiling of the fp32 forward's table gathers on this core, for benchmarks. 0 on the
// portable path.
double hashed_lookup_gather_probe_gbs(double seconds);

}  // namespace mnemo::kernels
