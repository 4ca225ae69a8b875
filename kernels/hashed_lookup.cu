// CUDA kernels of the hashed lookup (see hashed_lookup.cuh for the contract and
// hashed_lookup_cpu.h for the maths). Every kernel is static; the host functions below are
// the only entry points.
//
// Forward: one thread per (row, table) computes the bucket code and p; then a gather kernel
// gives each thread a vector of VEC output columns of a few rows and sums the k table rows
// into registers (four independent row loads in flight), so the tables are read with wide
// coalesced loads and y is written once.
// Backward, input: one warp per (row, table) dots dy with the gathered table row (a warp
// reduction) and writes the chunk's tau gradients; optionally it also scatter-adds p * dy
// into the table gradient with atomics (the fused, non-deterministic path).
// Backward, tables, deterministic: stable radix sort of (table, bucket) keys, then each
// bucket's rows are summed in row order in pieces of at most kPiece rows (one block per
// piece, so a hot bucket under a skewed load is spread over many blocks), and buckets with
// several pieces add their pieces in order. No atomics on floats anywhere in this path.
#include "kernels/hashed_lookup.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mnemo::kernels {

namespace {

void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(err) + " (" +
                           cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
}
#define MNEMO_CUDA_CHECK(expr) check_cuda((expr), #expr, __FILE__, __LINE__)
#define MNEMO_CUDA_CHECK_LAUNCH(kernel_name) check_cuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)

constexpr int kPiece = 256;        // rows summed by one block in the deterministic table gradient
constexpr int kGatherRows = 4;     // rows per block in the forward gather
constexpr int kWarpBlock = 256;    // threads per block of the warp-per-(row, table) kernels
constexpr int64_t kMaxGrid = 1 << 30;

// ---- element loads (fp32 / bf16 / fp16 widened to fp32) ----------------------------------

template <int VEC>
__device__ __forceinline__ void load_f32(const float* __restrict__ src, float* out) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int q = 0; q < VEC / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(src + 4 * q);
      out[4 * q + 0] = v.x;
      out[4 * q + 1] = v.y;
      out[4 * q + 2] = v.z;
      out[4 * q + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = src[i];
  }
}

template <int VEC>
__device__ __forceinline__ void store_f32(float* __restrict__ dst, const float* in) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int q = 0; q < VEC / 4; ++q)
      *reinterpret_cast<float4*>(dst + 4 * q) = make_float4(in[4 * q], in[4 * q + 1], in[4 * q + 2], in[4 * q + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dst[i] = in[i];
  }
}

template <int VEC>
__device__ __forceinline__ void load_table(const float* __restrict__ src, float* out) {
  load_f32<VEC>(src, out);
}

template <int VEC>
__device__ __forceinline__ void load_table(const __nv_bfloat16* __restrict__ src, float* out) {
  if constexpr (VEC % 8 == 0) {
#pragma unroll
    for (int q = 0; q < VEC / 8; ++q) {
      const uint4 raw = *reinterpret_cast<const uint4*>(src + 8 * q);
      const __nv_bfloat162* h2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const float2 f = __bfloat1622float2(h2[m]);
        out[8 * q + 2 * m] = f.x;
        out[8 * q + 2 * m + 1] = f.y;
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = __bfloat162float(src[i]);
  }
}

template <int VEC>
__device__ __forceinline__ void load_table(const __half* __restrict__ src, float* out) {
  if constexpr (VEC % 8 == 0) {
#pragma unroll
    for (int q = 0; q < VEC / 8; ++q) {
      const uint4 raw = *reinterpret_cast<const uint4*>(src + 8 * q);
      const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const float2 f = __half22float2(h2[m]);
        out[8 * q + 2 * m] = f.x;
        out[8 * q + 2 * m + 1] = f.y;
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = __half2float(src[i]);
  }
}

// dst[0..VEC) += a * v[0..VEC) with atomics (float4 atomics on sm_90+ when VEC allows).
template <int VEC>
__device__ __forceinline__ void atomic_axpy(float* dst, float a, const float* v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kWide = VEC % 4 == 0;
#else
  constexpr bool kWide = false;
#endif
  if constexpr (kWide) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
    for (int q = 0; q < VEC / 4; ++q)
      atomicAdd(reinterpret_cast<float4*>(dst + 4 * q),
                make_float4(a * v[4 * q], a * v[4 * q + 1], a * v[4 * q + 2], a * v[4 * q + 3]));
#endif
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) atomicAdd(dst + i, a * v[i]);
  }
}

// ---- forward -----------------------------------------------------------------------------

// Chunk e (= row * k + table) of x starts at x + e * tau.
__global__ void codes_kernel(const float* __restrict__ x, int32_t* __restrict__ bucket, float* __restrict__ p,
                             int64_t chunks, int tau, float two_over_t) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < chunks;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* z = x + e * tau;
    float denom = 1.f;
    int32_t code = 0;
    for (int i = 0; i < tau; ++i) {
      const float v = z[i];
      denom *= 1.f + expf(-two_over_t * fabsf(v));
      code |= static_cast<int32_t>(v >= 0.f) << i;
    }
    bucket[e] = code;
    p[e] = 1.f / denom;
  }
}

// Block (bx, by): rows [bx * kGatherRows, ...), column vectors strided over gridDim.y.
template <typename TT, int VEC>
__global__ void gather_kernel(const TT* __restrict__ tables, const int32_t* __restrict__ bucket,
                              const float* __restrict__ p, float* __restrict__ y, int64_t n, int64_t k,
                              int64_t rows_per_table, int64_t d_out) {
  const int64_t r_begin = static_cast<int64_t>(blockIdx.x) * kGatherRows;
  const int64_t r_end = r_begin + kGatherRows < n ? r_begin + kGatherRows : n;
  const int64_t c_step = static_cast<int64_t>(gridDim.y) * blockDim.x * VEC;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const int32_t* __restrict__ br = bucket + r * k;
    const float* __restrict__ pr = p + r * k;
    for (int64_t c = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * VEC; c < d_out; c += c_step) {
      float acc[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[i] = 0.f;
      int64_t j = 0;
      for (; j + 4 <= k; j += 4) {
        float v0[VEC], v1[VEC], v2[VEC], v3[VEC];
        load_table<VEC>(tables + ((j + 0) * rows_per_table + br[j + 0]) * d_out + c, v0);
        load_table<VEC>(tables + ((j + 1) * rows_per_table + br[j + 1]) * d_out + c, v1);
        load_table<VEC>(tables + ((j + 2) * rows_per_table + br[j + 2]) * d_out + c, v2);
        load_table<VEC>(tables + ((j + 3) * rows_per_table + br[j + 3]) * d_out + c, v3);
        const float p0 = pr[j], p1 = pr[j + 1], p2 = pr[j + 2], p3 = pr[j + 3];
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          acc[i] += p0 * v0[i];
          acc[i] += p1 * v1[i];
          acc[i] += p2 * v2[i];
          acc[i] += p3 * v3[i];
        }
      }
      for (; j < k; ++j) {
        float v[VEC];
        load_table<VEC>(tables + (j * rows_per_table + br[j]) * d_out + c, v);
        const float pj = pr[j];
#pragma unroll
        for (int i = 0; i < VEC; ++i) acc[i] += pj * v[i];
      }
      store_f32<VEC>(y + r * d_out + c, acc);
    }
  }
}

// ---- backward: input (+ optional atomic table gradient) ----------------------------------

template <typename TT, int VEC>
__global__ void backward_input_kernel(const float* __restrict__ x, const TT* __restrict__ tables,
                                      const int32_t* __restrict__ bucket, const float* __restrict__ p,
                                      const float* __restrict__ dy, float* __restrict__ dx, float* d_tables_atomic,
                                      int64_t chunks, int64_t k, int tau, int64_t rows_per_table, int64_t d_out,
                                      float two_over_t) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t e = warp; e < chunks; e += warps) {  // warp-uniform loop
    const int64_t r = e / k, j = e - r * k;
    const int64_t row = j * rows_per_table + bucket[e];
    const float pv = p[e];
    const TT* __restrict__ trow = tables + row * d_out;
    const float* __restrict__ dyr = dy + r * d_out;
    float part = 0.f;
    for (int64_t c = static_cast<int64_t>(lane) * VEC; c < d_out; c += 32 * VEC) {
      float tv[VEC], dv[VEC];
      load_table<VEC>(trow + c, tv);
      load_f32<VEC>(dyr + c, dv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) part += dv[i] * tv[i];
      if (d_tables_atomic) atomic_axpy<VEC>(d_tables_atomic + row * d_out + c, pv, dv);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) part += __shfl_xor_sync(0xffffffffu, part, off);
    if (lane < tau) {
      const float z = x[e * tau + lane];
      const float ez = expf(-two_over_t * fabsf(z));
      const float g = part * pv * two_over_t * (ez / (1.f + ez));  // (dy . T) * dp/d|z|
      dx[e * tau + lane] = z >= 0.f ? g : -g;
    }
  }
}

// ---- backward: tables, deterministic -----------------------------------------------------

__global__ void make_keys_kernel(const int32_t* __restrict__ bucket, uint32_t* __restrict__ keys,
                                 int32_t* __restrict__ vals, int64_t chunks, int64_t k, int tau) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < chunks;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = e % k;
    keys[e] = static_cast<uint32_t>((j << tau) + bucket[e]);
    vals[e] = static_cast<int32_t>(e);
  }
}

__device__ __forceinline__ int32_t lower_bound_u32(const uint32_t* a, int32_t n, uint32_t v) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    const int32_t mid = lo + ((hi - lo) >> 1);
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// For each segment s = (table, bucket) in [0, segs]: its first sorted position, its number
// of pieces, and (for the multi-piece ones) the same count again for the partials' offsets.
__global__ void segments_kernel(const uint32_t* __restrict__ keys_sorted, int32_t chunks, int32_t segs,
                                int32_t* __restrict__ seg_begin, int32_t* __restrict__ pieces,
                                int32_t* __restrict__ multi_pieces) {
  for (int32_t s = blockIdx.x * blockDim.x + threadIdx.x; s <= segs; s += gridDim.x * blockDim.x) {
    if (s == segs) {
      seg_begin[s] = chunks;
      pieces[s] = 0;
      multi_pieces[s] = 0;
      continue;
    }
    const int32_t a = lower_bound_u32(keys_sorted, chunks, static_cast<uint32_t>(s));
    const int32_t b = lower_bound_u32(keys_sorted, chunks, static_cast<uint32_t>(s) + 1u);
    const int32_t np = (b - a + kPiece - 1) / kPiece;
    seg_begin[s] = a;
    pieces[s] = np;
    multi_pieces[s] = np > 1 ? np : 0;
  }
}

// Block q sums piece q: up to kPiece consecutive sorted entries of one segment, in order.
__global__ void pieces_kernel(const int32_t* __restrict__ vals_sorted, const float* __restrict__ p,
                              const float* __restrict__ dy, const int32_t* __restrict__ seg_begin,
                              const int32_t* __restrict__ pieces, const int32_t* __restrict__ piece_off,
                              const int32_t* __restrict__ multi_off, float* __restrict__ d_tables,
                              float* __restrict__ partial, int32_t segs, int64_t k, int64_t d_out) {
  __shared__ int64_t s_row[kPiece];
  __shared__ float s_p[kPiece];
  const int32_t total_pieces = piece_off[segs];
  for (int64_t q64 = blockIdx.x; q64 < total_pieces; q64 += gridDim.x) {  // block-uniform loop
    const int32_t q = static_cast<int32_t>(q64);
    int32_t lo = 0, hi = segs;  // last s with piece_off[s] <= q (it has >= 1 piece since q < total)
    while (hi - lo > 1) {
      const int32_t mid = lo + ((hi - lo) >> 1);
      if (piece_off[mid] <= q) lo = mid;
      else hi = mid;
    }
    const int32_t s = lo;
    const int32_t jp = q - piece_off[s];
    const int32_t begin = seg_begin[s] + jp * kPiece;
    const int32_t end = min(seg_begin[s + 1], begin + kPiece);
    __syncthreads();  // the previous iteration is done with the shared arrays
    for (int32_t i = threadIdx.x; i < end - begin; i += blockDim.x) {
      const int32_t e = vals_sorted[begin + i];
      s_row[i] = (e / k) * d_out;
      s_p[i] = p[e];
    }
    __syncthreads();
    float* out = pieces[s] == 1 ? d_tables + static_cast<int64_t>(s) * d_out
                                : partial + static_cast<int64_t>(multi_off[s] + jp) * d_out;
    for (int64_t c = threadIdx.x; c < d_out; c += blockDim.x) {
      float acc = 0.f;
      for (int32_t i = 0; i < end - begin; ++i) acc += s_p[i] * dy[s_row[i] + c];
      out[c] = acc;
    }
  }
}

// Segments with several pieces: add the pieces' partial sums in order.
__global__ void finalize_kernel(const int32_t* __restrict__ multi_pieces, const int32_t* __restrict__ multi_off,
                                const float* __restrict__ partial, float* __restrict__ d_tables, int32_t segs,
                                int64_t d_out) {
  for (int64_t s = blockIdx.x; s < segs; s += gridDim.x) {
    const int32_t np = multi_pieces[s];
    if (np == 0) continue;
    const float* base = partial + static_cast<int64_t>(multi_off[s]) * d_out;
    for (int64_t c = threadIdx.x; c < d_out; c += blockDim.x) {
      float acc = 0.f;
      for (int32_t q = 0; q < np; ++q) acc += base[static_cast<int64_t>(q) * d_out + c];
      d_tables[s * d_out + c] = acc;
    }
  }
}

// ---- host helpers ------------------------------------------------------------------------

unsigned grid_for(int64_t work, int64_t per_block) {
  const int64_t g = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(g, kMaxGrid)));
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

void check_sizes(const char* fn, int64_t n, int64_t k, int tau, int64_t d_out) {
  if (n < 0 || k < 1 || tau < 1 || tau > 16 || d_out < 1 || n * k >= (int64_t{1} << 31) ||
      (k << tau) >= (int64_t{1} << 31))
    throw std::invalid_argument(std::string(fn) + ": invalid sizes n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                " tau=" + std::to_string(tau) + " d_out=" + std::to_string(d_out));
}

int bits_for(int64_t values) {  // smallest b with values <= 2^b
  int b = 0;
  while ((int64_t{1} << b) < values) ++b;
  return std::max(b, 1);
}

// Workspace carving for the deterministic table gradient (256-byte aligned pieces).
struct DetLayout {
  size_t keys_in, keys_out, vals_in, vals_out, seg_begin, pieces, piece_off, multi, multi_off, partial, temp, total;
  size_t temp_bytes;
};

size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

DetLayout det_layout(int64_t n, int64_t k, int tau, int64_t d_out) {
  const int64_t chunks = n * k;
  const int64_t segs = k << tau;
  const int end_bit = bits_for(segs);
  size_t sort_bytes = 0, scan_bytes = 0;
  MNEMO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const uint32_t*>(nullptr),
                                                   static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                   static_cast<int32_t*>(nullptr), static_cast<int>(chunks), 0, end_bit));
  MNEMO_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const int32_t*>(nullptr),
                                                 static_cast<int32_t*>(nullptr), static_cast<int>(segs + 1)));
  DetLayout l{};
  size_t off = 0;
  auto take = [&](size_t bytes) {
    const size_t at = off;
    off += align_up(std::max<size_t>(bytes, 1));
    return at;
  };
  const size_t c4 = static_cast<size_t>(chunks) * 4, s4 = static_cast<size_t>(segs + 1) * 4;
  l.keys_in = take(c4);
  l.keys_out = take(c4);
  l.vals_in = take(c4);
  l.vals_out = take(c4);
  l.seg_begin = take(s4);
  l.pieces = take(s4);
  l.piece_off = take(s4);
  l.multi = take(s4);
  l.multi_off = take(s4);
  // Multi-piece segments hold > kPiece rows, so their pieces number < 2 * chunks / kPiece.
  l.partial = take((static_cast<size_t>(2 * chunks / kPiece) + 1) * static_cast<size_t>(d_out) * 4);
  l.temp_bytes = std::max(sort_bytes, scan_bytes);
  l.temp = take(l.temp_bytes);
  l.total = off;
  return l;
}

template <typename T>
T* at(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

template <typename TT>
void launch_forward(const float* x, const TT* tables, float* y, int32_t* bucket, float* p, int64_t n, int64_t k,
                    int tau, int64_t d_out, float temperature, cudaStream_t stream) {
  const int64_t chunks = n * k;
  codes_kernel<<<grid_for(chunks, 256), 256, 0, stream>>>(x, bucket, p, chunks, tau, 2.f / temperature);
  MNEMO_CUDA_CHECK_LAUNCH("codes_kernel");
  constexpr int kVecMax = 16 / static_cast<int>(sizeof(TT));  // one 16-byte table load per thread and row
  const bool vec = d_out % kVecMax == 0 && aligned16(tables) && aligned16(y);
  const int vec_len = vec ? kVecMax : 1;
  const int64_t col_vecs = (d_out + vec_len - 1) / vec_len;
  const int threads = static_cast<int>(std::min<int64_t>(256, (col_vecs + 31) / 32 * 32));
  dim3 grid(grid_for(n, kGatherRows), static_cast<unsigned>(std::min<int64_t>((col_vecs + threads - 1) / threads, 65535)));
  const int64_t rows_per_table = int64_t{1} << tau;
  if (vec)
    gather_kernel<TT, kVecMax><<<grid, threads, 0, stream>>>(tables, bucket, p, y, n, k, rows_per_table, d_out);
  else
    gather_kernel<TT, 1><<<grid, threads, 0, stream>>>(tables, bucket, p, y, n, k, rows_per_table, d_out);
  MNEMO_CUDA_CHECK_LAUNCH("gather_kernel");
}

template <typename TT>
void launch_backward_input(const float* x, const TT* tables, const int32_t* bucket, const float* p, const float* dy,
                           float* dx, float* d_tables_atomic, int64_t n, int64_t k, int tau, int64_t d_out,
                           float temperature, cudaStream_t stream) {
  const int64_t chunks = n * k;
  constexpr int kVecMax = 16 / static_cast<int>(sizeof(TT));
  const bool vec = d_out % kVecMax == 0 && aligned16(tables) && aligned16(dy) &&
                   (d_tables_atomic == nullptr || aligned16(d_tables_atomic));
  const int64_t rows_per_table = int64_t{1} << tau;
  const unsigned grid = grid_for(chunks, kWarpBlock / 32);
  const float two_over_t = 2.f / temperature;
  if (vec)
    backward_input_kernel<TT, kVecMax><<<grid, kWarpBlock, 0, stream>>>(x, tables, bucket, p, dy, dx, d_tables_atomic,
                                                                        chunks, k, tau, rows_per_table, d_out, two_over_t);
  else
    backward_input_kernel<TT, 1><<<grid, kWarpBlock, 0, stream>>>(x, tables, bucket, p, dy, dx, d_tables_atomic, chunks,
                                                                   k, tau, rows_per_table, d_out, two_over_t);
  MNEMO_CUDA_CHECK_LAUNCH("backward_input_kernel");
}

// Atomic table gradient without the input gradient (used by the standalone entry point).
__global__ void scatter_atomic_kernel(const int32_t* __restrict__ bucket, const float* __restrict__ p,
                                      const float* __restrict__ dy, float* d_tables, int64_t chunks, int64_t k,
                                      int64_t rows_per_table, int64_t d_out) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t e = warp; e < chunks; e += warps) {
    const int64_t r = e / k, j = e - r * k;
    float* row = d_tables + (j * rows_per_table + bucket[e]) * d_out;
    const float pv = p[e];
    for (int64_t c = lane; c < d_out; c += 32) atomicAdd(row + c, pv * dy[r * d_out + c]);
  }
}

}  // namespace

void hashed_lookup_forward_cuda(const float* x, const void* tables, TableType table_type, float* y, int32_t* bucket,
                                float* p, int64_t n, int64_t k, int tau, int64_t d_out, float temperature,
                                cudaStream_t stream) {
  check_sizes("hashed_lookup_forward_cuda", n, k, tau, d_out);
  if (n == 0) return;
  switch (table_type) {
    case TableType::kFloat32:
      launch_forward(x, static_cast<const float*>(tables), y, bucket, p, n, k, tau, d_out, temperature, stream);
      break;
    case TableType::kBFloat16:
      launch_forward(x, static_cast<const __nv_bfloat16*>(tables), y, bucket, p, n, k, tau, d_out, temperature, stream);
      break;
    case TableType::kFloat16:
      launch_forward(x, static_cast<const __half*>(tables), y, bucket, p, n, k, tau, d_out, temperature, stream);
      break;
  }
}

size_t hashed_lookup_backward_tables_workspace_cuda(int64_t n, int64_t k, int tau, int64_t d_out, bool deterministic) {
  check_sizes("hashed_lookup_backward_tables_workspace_cuda", n, k, tau, d_out);
  if (!deterministic || n == 0) return 0;
  return det_layout(n, k, tau, d_out).total;
}

void hashed_lookup_backward_tables_cuda(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                        int64_t n, int64_t k, int tau, int64_t d_out, bool deterministic,
                                        void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  check_sizes("hashed_lookup_backward_tables_cuda", n, k, tau, d_out);
  const int64_t segs = k << tau;
  MNEMO_CUDA_CHECK(cudaMemsetAsync(d_tables, 0, static_cast<size_t>(segs * d_out) * sizeof(float), stream));
  if (n == 0) return;
  const int64_t chunks = n * k;
  const int64_t rows_per_table = int64_t{1} << tau;
  if (!deterministic) {
    scatter_atomic_kernel<<<grid_for(chunks, kWarpBlock / 32), kWarpBlock, 0, stream>>>(bucket, p, dy, d_tables, chunks,
                                                                                        k, rows_per_table, d_out);
    MNEMO_CUDA_CHECK_LAUNCH("scatter_atomic_kernel");
    return;
  }
  const DetLayout l = det_layout(n, k, tau, d_out);
  if (workspace == nullptr || workspace_bytes < l.total)
    throw std::invalid_argument("hashed_lookup_backward_tables_cuda: workspace of " + std::to_string(workspace_bytes) +
                                " bytes, need " + std::to_string(l.total));
  uint32_t* keys_in = at<uint32_t>(workspace, l.keys_in);
  uint32_t* keys_out = at<uint32_t>(workspace, l.keys_out);
  int32_t* vals_in = at<int32_t>(workspace, l.vals_in);
  int32_t* vals_out = at<int32_t>(workspace, l.vals_out);
  int32_t* seg_begin = at<int32_t>(workspace, l.seg_begin);
  int32_t* pieces = at<int32_t>(workspace, l.pieces);
  int32_t* piece_off = at<int32_t>(workspace, l.piece_off);
  int32_t* multi = at<int32_t>(workspace, l.multi);
  int32_t* multi_off = at<int32_t>(workspace, l.multi_off);
  float* partial = at<float>(workspace, l.partial);
  void* temp = at<char>(workspace, l.temp);

  make_keys_kernel<<<grid_for(chunks, 256), 256, 0, stream>>>(bucket, keys_in, vals_in, chunks, k, tau);
  MNEMO_CUDA_CHECK_LAUNCH("make_keys_kernel");
  size_t temp_bytes = l.temp_bytes;
  // Radix sort is stable: equal keys keep their order of e = row * k + table, i.e. row order.
  MNEMO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out,
                                                   static_cast<int>(chunks), 0, bits_for(segs), stream));
  const int32_t segs32 = static_cast<int32_t>(segs), chunks32 = static_cast<int32_t>(chunks);
  segments_kernel<<<grid_for(segs + 1, 256), 256, 0, stream>>>(keys_out, chunks32, segs32, seg_begin, pieces, multi);
  MNEMO_CUDA_CHECK_LAUNCH("segments_kernel");
  temp_bytes = l.temp_bytes;
  MNEMO_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, pieces, piece_off, segs32 + 1, stream));
  temp_bytes = l.temp_bytes;
  MNEMO_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, multi, multi_off, segs32 + 1, stream));
  // At most chunks / kPiece + segs pieces; blocks past the real count exit at once.
  const int threads = static_cast<int>(std::min<int64_t>(256, (d_out + 31) / 32 * 32));
  pieces_kernel<<<grid_for(chunks / kPiece + segs, 1), threads, 0, stream>>>(
      vals_out, p, dy, seg_begin, pieces, piece_off, multi_off, d_tables, partial, segs32, k, d_out);
  MNEMO_CUDA_CHECK_LAUNCH("pieces_kernel");
  finalize_kernel<<<grid_for(segs, 1), threads, 0, stream>>>(multi, multi_off, partial, d_tables, segs32, d_out);
  MNEMO_CUDA_CHECK_LAUNCH("finalize_kernel");
}

void hashed_lookup_backward_input_cuda(const float* x, const void* tables, TableType table_type,
                                       const int32_t* bucket, const float* p, const float* dy, float* dx,
                                       float* d_tables_atomic, int64_t n, int64_t k, int tau, int64_t d_out,
                                       float temperature, cudaStream_t stream) {
  check_sizes("hashed_lookup_backward_input_cuda", n, k, tau, d_out);
  if (n == 0) return;
  switch (table_type) {
    case TableType::kFloat32:
      launch_backward_input(x, static_cast<const float*>(tables), bucket, p, dy, dx, d_tables_atomic, n, k, tau, d_out,
                            temperature, stream);
      break;
    case TableType::kBFloat16:
      launch_backward_input(x, static_cast<const __nv_bfloat16*>(tables), bucket, p, dy, dx, d_tables_atomic, n, k,
                            tau, d_out, temperature, stream);
      break;
    case TableType::kFloat16:
      launch_backward_input(x, static_cast<const __half*>(tables), bucket, p, dy, dx, d_tables_atomic, n, k, tau,
                            d_out, temperature, stream);
      break;
  }
}

double cuda_peak_bandwidth_gbs(int device) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls do not see it
    return 0.0;
  }
  return 2.0 * static_cast<double>(clock_khz) * 1e3 * static_cast<double>(bus_bits) / 8.0 / 1e9;  // DDR: 2 per clock
}

}  // namespace mnemo::kernels
