// CPU kernels of the hashed lookup (see hashed_lookup_cpu.h for the maths, the layout and the
// code paths; docs/benchmarks.md, "bench hashed-linear", for the measurements behind the
// choices below).
//
// Portable path: plain loops, the reference for the vectorised ones and the only path for
// double.
//
// Vectorised paths (kernels/hashed_lookup_cpu_simd.inc, compiled twice below: for AVX2 + FMA
// and for AVX-512 F, each with GCC/Clang target attributes, and picked at run time). What
// bounds them is moving table rows, not arithmetic: every lookup multiply-adds one table row
// piece, and the 2^tau x d_out tables (32 MiB at d = 512, tau = 8) live in DRAM. So:
// * Work in column blocks of 32 floats. A block's table "slabs" (2^tau x 32 floats per
//   table) are packed, a group of tables at a time (2 MiB: all 64 tables at d = 512,
//   tau = 8), into a contiguous buffer: read straight from the tables, rows 4 d_out bytes
//   apart map onto a few cache sets and evict each other (at d = 512 only about two
//   tables' slabs would stay in L2).
// * Keep the outputs in registers: the forward holds y for 8 rows x 32 columns in 16
//   vector registers across a group's tables; the table gradient sorts the rows of each table
//   by bucket (a stable counting sort) and sums each bucket's rows in registers, so each
//   d_tables piece is written once; the input gradient reduces 16 (or 8) dot products at
//   once with a transposed tree of shuffles and adds.
// * Codes (bucket, p) are computed 16 chunks at a time: the chunks' i-th components in one
//   vector (permutes of the loaded floats on AVX-512, a gather on AVX2 and for the last
//   k % 16 chunks), a polynomial exp, a compare for the code bit.
// * Every output element is owned by one task and summed in a fixed order, so results do
//   not depend on the thread count; the AVX2 path emulates 16-lane vectors with pairs of
//   8-lane ones so that it computes the same bits as the AVX-512 path.
#include "kernels/hashed_lookup_cpu.h"
#include "kernels/limits.h"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MNEMO_X86_SIMD 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define MNEMO_X86_SIMD 0
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mnemo::kernels {

namespace {

void run(const ParallelFor& pf, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  if (pf) pf(n, std::max<int64_t>(1, grain), body);
  else body(0, n);
}

// ---- scratch memory ---------------------------------------------------------------------------
//
// Per-thread buffers that grow to the largest size asked for and are kept (freeing and
// re-allocating a few MiB per call costs page faults that show up in the timings). Buffers of
// 1 MiB or more are 2 MiB-aligned and, on Linux, marked for transparent huge pages: the
// kernels touch their slab buffers at random, and 4 KiB pages cost TLB misses there.
enum Slot : int {
  kSlabSlot,     // task: packed table slabs
  kTileSlot,     // task: forward partial sums between table groups / packed dy tile (table gradient)
  kCursorSlot,   // task: per-bucket positions (counting sort; table gradient over several tiles)
  kCoefSlot,     // task: per-row coefficients (input gradient)
  kOrderSlot,    // call: codes by row block (forward) / rows of each table sorted by bucket
  kSortPSlot,    // call: p alongside kOrderSlot
  kStartSlot,    // call: first sorted position of each bucket
  kDotSlot,      // call: dy . T_j[h] per row and table
  kChunkSlot,    // call: chunk index of every input column
  kSlots
};

class Scratch {
 public:
  ~Scratch() {
    for (auto& b : bufs_) std::free(b.ptr);
  }
  void* get(Slot s, size_t bytes) {
    Buf& b = bufs_[s];
    if (bytes <= b.cap) return b.ptr;
    std::free(b.ptr);
    b = Buf{};
    constexpr size_t kHuge = size_t{2} << 20;
    const bool huge = bytes >= (size_t{1} << 20);
    const size_t align = huge ? kHuge : 64;
    const size_t cap = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, cap);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(p, cap, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
    b = Buf{p, cap};
    return p;
  }

 private:
  struct Buf {
    void* ptr = nullptr;
    size_t cap = 0;
  };
  Buf bufs_[kSlots];
};

Scratch& thread_scratch() {
  thread_local Scratch sc;
  return sc;
}

template <typename T>
T* scratch(Slot s, size_t count) {
  return static_cast<T*>(thread_scratch().get(s, std::max<size_t>(count, 1) * sizeof(T)));
}

// CPU time of the calling thread in seconds (the process's, through std::clock, where the
// thread clock is missing).
double thread_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
#endif
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

// ---- exp ----------------------------------------------------------------------------------------

// e^-a for a >= 0, a clamped at 80 (e^-80 ~ 1.8e-35 is still a normal float, and 1 + e^-a
// is 1 from a ~ 17 on). The clamp works on the bits (non-negative floats order like their
// bit patterns); it maps NaN to 80 too, so the callers restore NaN themselves. Range
// reduction -a = n ln2 + r, |r| <= ln2/2 (ln2 split in two for accuracy), a degree-6
// minimax polynomial for e^r (Cephes' expf coefficients), and 2^n through the exponent bits.
// The vectorised paths evaluate the same steps with fused multiply-adds.
inline float exp_neg(float a) {
  constexpr int32_t kBits80 = 0x42a00000;  // 80.0f
  int32_t ai;
  std::memcpy(&ai, &a, sizeof ai);
  ai = ai < kBits80 ? ai : kBits80;
  std::memcpy(&a, &ai, sizeof a);
  const float x = -a;
  const int32_t ni = -static_cast<int32_t>(0.5f - x * 1.44269504088896341f);  // round(x log2 e), x <= 0
  const float n = static_cast<float>(ni);
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float q = 1.9875691500e-4f;
  q = q * r + 1.3981999507e-3f;
  q = q * r + 8.3334519073e-3f;
  q = q * r + 4.1665795894e-2f;
  q = q * r + 1.6666665459e-1f;
  q = q * r + 5.0000001201e-1f;
  const float er = q * r * r + r + 1.0f;
  const int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return er * scale;
}
inline double exp_neg(double a) { return std::exp(-a); }

// ---- table elements -----------------------------------------------------------------------------

// 16-bit table elements (TableType::kBFloat16 / kFloat16), widened to float as they are read.
struct Bf16 {
  uint16_t bits;
};
struct Half {
  uint16_t bits;
};

inline float to_float(float v) { return v; }
inline double to_float(double v) { return v; }
inline float to_float(Bf16 v) {  // bf16 is the top half of a float
  const uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float to_float(Half v) {  // IEEE binary16, exactly (subnormals, infinities, NaN)
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t exp = (v.bits >> 10) & 0x1fu, man = v.bits & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  const uint32_t u = sign | (exp == 0x1f ? (0xffu << 23) | (man << 13) : ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- portable path ------------------------------------------------------------------------------

// Codes and p of rows [r0, r1).
template <typename T>
void codes_rows(const T* x, int32_t* bucket, T* p, int64_t r0, int64_t r1, int64_t k, int tau, T two_over_t) {
  const int64_t d_in = k * tau;
  std::vector<T> e(static_cast<size_t>(d_in));
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * d_in;
    for (int64_t c = 0; c < d_in; ++c) e[static_cast<size_t>(c)] = exp_neg(two_over_t * std::fabs(xr[c]));
    for (int64_t j = 0; j < k; ++j) {
      const T* z = xr + j * tau;
      const T* ez = e.data() + j * tau;
      T denom = 1;
      int32_t code = 0;
      bool nan = false;
      for (int i = 0; i < tau; ++i) {
        denom *= T(1) + ez[i];
        code |= static_cast<int32_t>(z[i] >= T(0)) << i;
        nan = nan || std::isnan(z[i]);
      }
      bucket[r * k + j] = code;
      p[r * k + j] = nan ? std::numeric_limits<T>::quiet_NaN() : T(1) / denom;  // NaN in x is never hidden
    }
  }
}

template <typename T>
int64_t row_grain(int64_t width) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width));
}

// Where a table row's elements are: the tables in their own layout, or packed
// (hashed_lookup_cpu.h, "tables kept in the kernels' layout"). each(j, h, f) calls
// f(c, T_j[h][c] as a float) for c = 0 .. d_out - 1, in that order.
template <class E>
inline int64_t packed_lane(int64_t l) {  // position of column l in a packed piece
  if constexpr (std::is_same_v<E, Bf16>) return l < 16 ? 2 * l : 2 * (l - 16) + 1;
  else return l;
}

template <class E>
struct TableRows {
  const E* base;
  bool packed;
  int64_t k, rows, d_out;
  template <class Fn>
  void each(int64_t j, int64_t h, Fn&& f) const {
    if (!packed) {
      const E* t = base + (j * rows + h) * d_out;
      for (int64_t c = 0; c < d_out; ++c) f(c, to_float(t[c]));
      return;
    }
    for (int64_t c0 = 0; c0 < d_out; c0 += kHashedPackCols) {
      const E* piece = base + ((c0 / kHashedPackCols * k + j) * rows + h) * kHashedPackCols;
      const int64_t w = std::min(kHashedPackCols, d_out - c0);
      for (int64_t l = 0; l < w; ++l) f(c0 + l, to_float(piece[packed_lane<E>(l)]));
    }
  }
};

template <typename T, typename E>
void portable_forward(const T* x, const TableRows<E>& tables, T* y, int32_t* bucket, T* p, int64_t n, int64_t k,
                      int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  const T two_over_t = static_cast<T>(2.0 / temperature);
  run(pf, n, row_grain<T>(k * tau + d_out), [&](int64_t r0, int64_t r1) {
    codes_rows(x, bucket, p, r0, r1, k, tau, two_over_t);
    for (int64_t r = r0; r < r1; ++r) {
      T* yr = y + r * d_out;
      std::fill_n(yr, d_out, T(0));
      for (int64_t j = 0; j < k; ++j) {
        const T pv = p[r * k + j];
        tables.each(j, bucket[r * k + j], [&](int64_t c, T v) { yr[c] += pv * v; });
      }
    }
  });
}
template <typename T, typename E>
void portable_forward(const T* x, const E* tables, T* y, int32_t* bucket, T* p, int64_t n, int64_t k, int tau,
                      int64_t d_out, double temperature, const ParallelFor& pf) {
  portable_forward(x, TableRows<E>{tables, false, k, int64_t{1} << tau, d_out}, y, bucket, p, n, k, tau, d_out,
                   temperature, pf);
}

template <typename T>
void portable_backward_tables(const int32_t* bucket, const T* p, const T* dy, T* d_tables, int64_t n, int64_t k,
                              int tau, int64_t d_out, const ParallelFor& pf) {
  const int64_t rows = int64_t{1} << tau;
  run(pf, k, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      T* dt = d_tables + j * rows * d_out;
      std::fill_n(dt, rows * d_out, T(0));
      for (int64_t r = 0; r < n; ++r) {
        T* dst = dt + bucket[r * k + j] * d_out;
        const T pv = p[r * k + j];
        const T* src = dy + r * d_out;
        for (int64_t c = 0; c < d_out; ++c) dst[c] += pv * src[c];
      }
    }
  });
}

template <typename T, typename E>
void portable_backward_input(const T* x, const TableRows<E>& tables, const int32_t* bucket, const T* p, const T* dy,
                             T* dx, int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                             const ParallelFor& pf) {
  const int64_t d_in = k * tau;
  const T two_over_t = static_cast<T>(2.0 / temperature);
  run(pf, n, row_grain<T>(d_in + k * d_out), [&](int64_t r0, int64_t r1) {
    std::vector<T> e(static_cast<size_t>(d_in));
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * d_in;
      const T* dyr = dy + r * d_out;
      for (int64_t c = 0; c < d_in; ++c) e[static_cast<size_t>(c)] = exp_neg(two_over_t * std::fabs(xr[c]));
      for (int64_t j = 0; j < k; ++j) {
        T g = 0;
        tables.each(j, bucket[r * k + j], [&](int64_t c, T v) { g += dyr[c] * v; });
        const T coef = g * p[r * k + j] * two_over_t;
        for (int i = 0; i < tau; ++i) {
          const int64_t col = j * tau + i;
          const T ei = e[static_cast<size_t>(col)];
          const T one_minus_s = ei / (T(1) + ei);  // 1 - sigmoid(2|z|/t)
          dx[r * d_in + col] = xr[col] >= T(0) ? coef * one_minus_s : -(coef * one_minus_s);
        }
      }
    }
  });
}

template <typename T, typename E>
void portable_backward_input(const T* x, const E* tables, const int32_t* bucket, const T* p, const T* dy, T* dx,
                             int64_t n, int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  portable_backward_input(x, TableRows<E>{tables, false, k, int64_t{1} << tau, d_out}, bucket, p, dy, dx, n, k, tau,
                          d_out, temperature, pf);
}

// Packs one table type (hashed_lookup_cpu.h, "tables kept in the kernels' layout"): each task
// reads whole rows of its tables in order and writes their pieces to every column block.
template <class E>
void pack_tables(const E* tables, E* packed, int64_t k, int64_t rows, int64_t d_out, const ParallelFor& pf) {
  run(pf, k, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t h = 0; h < rows; ++h) {
        const E* src = tables + (j * rows + h) * d_out;
        for (int64_t c0 = 0; c0 < d_out; c0 += kHashedPackCols) {
          E* dst = packed + ((c0 / kHashedPackCols * k + j) * rows + h) * kHashedPackCols;
          const int64_t w = std::min(kHashedPackCols, d_out - c0);
          if (w == kHashedPackCols && !std::is_same_v<E, Bf16>) {
            std::memcpy(dst, src + c0, sizeof(E) * kHashedPackCols);
            continue;
          }
          E piece[kHashedPackCols];
          std::memset(piece, 0, sizeof piece);
          for (int64_t l = 0; l < w; ++l) piece[packed_lane<E>(l)] = src[c0 + l];
          std::memcpy(dst, piece, sizeof piece);
        }
      }
  });
}

// ---- vectorised paths ---------------------------------------------------------------------------

#if MNEMO_X86_SIMD

constexpr int64_t kCols = kHashedPackCols;  // columns per block: two 16-lane vectors
static_assert(kCols == 32, "the vector layer loads a block as two 16-lane vectors");
// Packed slabs of one column block and group of tables (all 64 tables at d = 512, tau = 8).
// More than L2 (1 MiB here), but measured faster than groups that fit: with fewer tables per
// group the partial sums of every row go through memory between groups, and the codes are
// read once per group.
constexpr int64_t kSlabBudget = int64_t{2} << 20;
// Packed slabs of a super-block (column blocks packed together) and group. At d = 512,
// tau = 8 one block: packing several blocks per pass reads the tables in longer runs, but
// the gathers then find less of their block's slabs in cache (measured slower).
constexpr int64_t kPackBudget = int64_t{2} << 20;
constexpr int64_t kTileBudget = int64_t{4} << 20;  // forward partial sums of a super-block
// dy rows per packed tile of the table gradient. Over several tiles every d_tables piece is
// reloaded once per tile, which measured slower than reading a bigger tile from L3, so tiles
// only start past 64 Ki rows (8 MiB).
constexpr int64_t kTileRows = int64_t{64} << 10;

// How the tables are read. Slabs (2^tau rows x kCols columns of one table) are packed when
// they are small enough to stay cached (at most 256 KiB: 2^tau <= 2048 for fp32) and the
// rows use them enough (at least one lookup per 8 of their rows); otherwise the kernels read
// the tables in place. Tables go in groups whose slabs for one column block take about
// kSlabBudget bytes (at least min_group tables), and column blocks in super-blocks packed
// together.
struct SlabPlan {
  bool packed;
  int64_t group, super;
};

SlabPlan slab_plan(int64_t rows, int64_t n, int64_t k, int64_t d_out, int64_t elem_bytes, int64_t min_group,
                   int64_t tile_bytes_per_block) {
  const int64_t slab = rows * kCols * elem_bytes, blocks = (d_out + kCols - 1) / kCols;
  const bool packed = slab <= (int64_t{256} << 10) && n * 8 >= rows;
  if (!packed) return {false, k, 1};
  const int64_t group = std::min(k, std::max(min_group, kSlabBudget / slab));
  int64_t super = std::max<int64_t>(1, kPackBudget / (group * slab));
  if (tile_bytes_per_block > 0) super = std::min(super, std::max<int64_t>(1, kTileBudget / tile_bytes_per_block));
  return {true, group, std::min(super, blocks)};
}

// Rows of each table in bucket order, rows ascending within a bucket (a stable counting sort):
// order[j * n + s] is the s-th row, ps[j * n + s] its p, and the rows of bucket b of table j
// are at s in [start[j * (rows + 1) + b], start[j * (rows + 1) + b + 1]).
void sort_by_bucket(const int32_t* bucket, const float* p, int32_t* order, float* ps, int32_t* start, int64_t n,
                    int64_t k, int64_t rows, const ParallelFor& pf) {
  run(pf, k, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      int32_t* st = start + j * (rows + 1);
      std::fill_n(st, rows + 1, 0);
      for (int64_t r = 0; r < n; ++r) ++st[bucket[r * k + j] + 1];
      for (int64_t b = 0; b < rows; ++b) st[b + 1] += st[b];
      int32_t* cur = scratch<int32_t>(kCursorSlot, static_cast<size_t>(rows));
      std::copy_n(st, rows, cur);
      int32_t* oj = order + j * n;
      float* pj = ps + j * n;
      for (int64_t r = 0; r < n; ++r) {
        const int32_t s = cur[bucket[r * k + j]]++;
        oj[s] = static_cast<int32_t>(r);
        pj[s] = p[r * k + j];
      }
    }
  });
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace avx2 {

// 16 float lanes as two 8-lane vectors; masks are all-ones lanes.
struct F {
  __m256 a, b;
};
struct I {
  __m256i a, b;
};
struct M {
  __m256 a, b;
};
constexpr int kUnit = 8;  // dot products reduced at once
constexpr int kRows = 3;  // forward rows held in registers (3 x 2 x 2 of the 16 ymm)
// Vector q of a reduction unit goes to slot_of(q) so the sums come out in order (see reduce).
constexpr int slot_of(int q) { return q < 4 ? 2 * q : 2 * (q - 4) + 1; }

inline F zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline F set1(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
inline F load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline F load(const float* p, M m) {
  return {_mm256_maskload_ps(p, _mm256_castps_si256(m.a)), _mm256_maskload_ps(p + 8, _mm256_castps_si256(m.b))};
}
inline void store(float* p, F v) {
  _mm256_storeu_ps(p, v.a);
  _mm256_storeu_ps(p + 8, v.b);
}
inline void store(float* p, F v, M m) {
  _mm256_maskstore_ps(p, _mm256_castps_si256(m.a), v.a);
  _mm256_maskstore_ps(p + 8, _mm256_castps_si256(m.b), v.b);
}
inline void stream(float* p, F v) {  // p 64-byte aligned
  _mm256_stream_ps(p, v.a);
  _mm256_stream_ps(p + 8, v.b);
}
inline M first(int n) {  // lanes [0, n)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return {_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx)),
          _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), idx))};
}
inline M no_lanes() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline F fma(F x, F y, F z) { return {_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)}; }
inline F mul(F x, F y) { return {_mm256_mul_ps(x.a, y.a), _mm256_mul_ps(x.b, y.b)}; }
inline F add(F x, F y) { return {_mm256_add_ps(x.a, y.a), _mm256_add_ps(x.b, y.b)}; }
inline F div(F x, F y) { return {_mm256_div_ps(x.a, y.a), _mm256_div_ps(x.b, y.b)}; }
inline F neg(F x) {
  const __m256 s = _mm256_set1_ps(-0.0f);
  return {_mm256_xor_ps(x.a, s), _mm256_xor_ps(x.b, s)};
}
inline F abs(F x) {
  const __m256 s = _mm256_set1_ps(-0.0f);
  return {_mm256_andnot_ps(s, x.a), _mm256_andnot_ps(s, x.b)};
}
inline M ge_zero(F x) {
  const __m256 z = _mm256_setzero_ps();
  return {_mm256_cmp_ps(x.a, z, _CMP_GE_OQ), _mm256_cmp_ps(x.b, z, _CMP_GE_OQ)};
}
inline M is_nan(F x) { return {_mm256_cmp_ps(x.a, x.a, _CMP_UNORD_Q), _mm256_cmp_ps(x.b, x.b, _CMP_UNORD_Q)}; }
inline M mor(M x, M y) { return {_mm256_or_ps(x.a, y.a), _mm256_or_ps(x.b, y.b)}; }
inline F select(M m, F x, F y) { return {_mm256_blendv_ps(y.a, x.a, m.a), _mm256_blendv_ps(y.b, x.b, m.b)}; }

inline I iset1(int v) { return {_mm256_set1_epi32(v), _mm256_set1_epi32(v)}; }
inline I izero() { return iset1(0); }
inline I ilanes_times(int s) {  // lane * s
  const __m256i lo = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i sv = _mm256_set1_epi32(s);
  return {_mm256_mullo_epi32(lo, sv), _mm256_mullo_epi32(_mm256_add_epi32(lo, _mm256_set1_epi32(8)), sv)};
}
inline I iload(const int32_t* p) {
  return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8))};
}
inline I iadd(I x, I y) { return {_mm256_add_epi32(x.a, y.a), _mm256_add_epi32(x.b, y.b)}; }
inline I or_where(I code, M m, I bits) {
  return {_mm256_or_si256(code.a, _mm256_and_si256(_mm256_castps_si256(m.a), bits.a)),
          _mm256_or_si256(code.b, _mm256_and_si256(_mm256_castps_si256(m.b), bits.b))};
}
inline void istore(int32_t* p, I v, M m) {
  _mm256_maskstore_epi32(p, _mm256_castps_si256(m.a), v.a);
  _mm256_maskstore_epi32(p + 8, _mm256_castps_si256(m.b), v.b);
}
inline F gather(const float* base, I idx, M m) {
  return {_mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, idx.a, m.a, 4),
          _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, idx.b, m.b, 4)};
}
// The components of 16 whole chunks (16 tau consecutive floats at src) as tau vectors: lane l
// of z[i] is chunk l's component i. Gathers here (avx512 permutes the loaded floats instead).
class ChunkTranspose {
 public:
  explicit ChunkTranspose(int tau) : tau_(tau), offsets_(ilanes_times(tau)), all_(first(16)) {}
  void operator()(const float* src, F* z) const {
    for (int i = 0; i < tau_; ++i) z[i] = gather(src, iadd(offsets_, iset1(i)), all_);
  }

 private:
  int tau_;
  I offsets_;
  M all_;
};
// Float <-> int helpers for exp_neg.
inline I bits_of(F x) { return {_mm256_castps_si256(x.a), _mm256_castps_si256(x.b)}; }
inline F from_bits(I x) { return {_mm256_castsi256_ps(x.a), _mm256_castsi256_ps(x.b)}; }
inline I imin(I x, I y) { return {_mm256_min_epi32(x.a, y.a), _mm256_min_epi32(x.b, y.b)}; }
inline I ineg(I x) {
  const __m256i z = _mm256_setzero_si256();
  return {_mm256_sub_epi32(z, x.a), _mm256_sub_epi32(z, x.b)};
}
inline I trunc_int(F x) { return {_mm256_cvttps_epi32(x.a), _mm256_cvttps_epi32(x.b)}; }
inline F to_float(I x) { return {_mm256_cvtepi32_ps(x.a), _mm256_cvtepi32_ps(x.b)}; }
inline F fnma(F x, F y, F z) { return {_mm256_fnmadd_ps(x.a, y.a, z.a), _mm256_fnmadd_ps(x.b, y.b, z.b)}; }
inline I shl23(I x) { return {_mm256_slli_epi32(x.a, 23), _mm256_slli_epi32(x.b, 23)}; }

// Sums of the kUnit vectors v[slot_of(q)], q = 0..kUnit-1, as one 8-lane vector in q order.
// Each vector is summed by the tree (l, l+8), (l, l+4), (l, l+2), (l, l+1), as in avx512.
inline __m256 reduce(const F* v) {
  __m256 s[8], x[4], y[2];
  for (int i = 0; i < 8; ++i) s[i] = _mm256_add_ps(v[i].a, v[i].b);
  for (int i = 0; i < 4; ++i)
    x[i] = _mm256_add_ps(_mm256_permute2f128_ps(s[2 * i], s[2 * i + 1], 0x20),
                         _mm256_permute2f128_ps(s[2 * i], s[2 * i + 1], 0x31));
  for (int i = 0; i < 2; ++i)
    y[i] = _mm256_add_ps(_mm256_shuffle_ps(x[2 * i], x[2 * i + 1], 0x44), _mm256_shuffle_ps(x[2 * i], x[2 * i + 1], 0xEE));
  return _mm256_add_ps(_mm256_shuffle_ps(y[0], y[1], 0x88), _mm256_shuffle_ps(y[0], y[1], 0xDD));
}
// dst[0..n) += sums[0..n), n <= kUnit.
inline void add_sums(float* dst, __m256 sums, int n) {
  if (n == kUnit) {
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), sums));
  } else {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(dst, m, _mm256_add_ps(_mm256_maskload_ps(dst, m), sums));
  }
}
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void store_fence() { _mm_sfence(); }

// 16 table elements as floats.
inline F widen(const Bf16* p) {
  const __m128i* q = reinterpret_cast<const __m128i*>(p);
  return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(q)), 16)),
          _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(q + 1)), 16))};
}
inline F widen(const Half* p) {
  const __m128i* q = reinterpret_cast<const __m128i*>(p);
  return {_mm256_cvtph_ps(_mm_loadu_si128(q)), _mm256_cvtph_ps(_mm_loadu_si128(q + 1))};
}
// One piece of kCols = 32 table elements into a packed slab: copied, except bf16, which is
// stored as 16 words (col l + 16) << 16 | (col l) so that it widens with a shift and a mask
// (packed_piece) instead of two zero-extending shuffles.
template <class E>
inline void pack_piece(const E* src, E* dst) {
  const __m256i* s = reinterpret_cast<const __m256i*>(src);
  __m256i* d = reinterpret_cast<__m256i*>(dst);
  for (size_t i = 0; i < 32 * sizeof(E) / 32; ++i) _mm256_storeu_si256(d + i, _mm256_loadu_si256(s + i));
}
template <>
inline void pack_piece(const Bf16* src, Bf16* dst) {
  const __m128i* s = reinterpret_cast<const __m128i*>(src);
  __m256i* d = reinterpret_cast<__m256i*>(dst);
  for (int h = 0; h < 2; ++h)
    _mm256_storeu_si256(d + h, _mm256_or_si256(_mm256_cvtepu16_epi32(_mm_loadu_si128(s + h)),
                                               _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(s + 2 + h)), 16)));
}
// A packed piece (pack_piece's layout) as floats: columns 0..15 in a, 16..31 in b.
inline void packed_piece(const float* p, F& a, F& b) {
  a = load(p);
  b = load(p + 16);
}
inline void packed_piece(const Half* p, F& a, F& b) {
  a = widen(p);
  b = widen(p + 16);
}
inline void packed_piece(const Bf16* p, F& a, F& b) {
  const __m256i* q = reinterpret_cast<const __m256i*>(p);
  const __m256i w0 = _mm256_loadu_si256(q), w1 = _mm256_loadu_si256(q + 1);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  a = {_mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16))};
  b = {_mm256_castsi256_ps(_mm256_and_si256(w0, high)), _mm256_castsi256_ps(_mm256_and_si256(w1, high))};
}

#include "kernels/hashed_lookup_cpu_simd.inc"

}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_* (a self-initialised variable),
// which -Wuninitialized reports at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace avx512 {

struct F {
  __m512 v;
};
struct I {
  __m512i v;
};
struct M {
  __mmask16 m;
};
constexpr int kUnit = 16;
constexpr int kRows = 8;  // 8 x 2 accumulators of the 32 zmm
constexpr int slot_of(int q) { return 4 * (q % 4) + q / 4; }

inline F zero() { return {_mm512_setzero_ps()}; }
inline F set1(float v) { return {_mm512_set1_ps(v)}; }
inline F load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline F load(const float* p, M m) { return {_mm512_maskz_loadu_ps(m.m, p)}; }
inline void store(float* p, F v) { _mm512_storeu_ps(p, v.v); }
inline void store(float* p, F v, M m) { _mm512_mask_storeu_ps(p, m.m, v.v); }
inline void stream(float* p, F v) { _mm512_stream_ps(p, v.v); }
inline M first(int n) {
  return {static_cast<__mmask16>(n >= 16 ? 0xFFFFu : n <= 0 ? 0u : (1u << n) - 1u)};
}
inline M no_lanes() { return {0}; }
inline F fma(F x, F y, F z) { return {_mm512_fmadd_ps(x.v, y.v, z.v)}; }
inline F mul(F x, F y) { return {_mm512_mul_ps(x.v, y.v)}; }
inline F add(F x, F y) { return {_mm512_add_ps(x.v, y.v)}; }
inline F div(F x, F y) { return {_mm512_div_ps(x.v, y.v)}; }
inline F neg(F x) {
  return {_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x.v), _mm512_set1_epi32(INT32_MIN)))};
}
inline F abs(F x) {
  return {_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x.v), _mm512_set1_epi32(INT32_MAX)))};
}
inline M ge_zero(F x) { return {_mm512_cmp_ps_mask(x.v, _mm512_setzero_ps(), _CMP_GE_OQ)}; }
inline M is_nan(F x) { return {_mm512_cmp_ps_mask(x.v, x.v, _CMP_UNORD_Q)}; }
inline M mor(M x, M y) { return {static_cast<__mmask16>(x.m | y.m)}; }
inline F select(M m, F x, F y) { return {_mm512_mask_blend_ps(m.m, y.v, x.v)}; }

inline I iset1(int v) { return {_mm512_set1_epi32(v)}; }
inline I izero() { return iset1(0); }
inline I ilanes_times(int s) {
  return {_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                             _mm512_set1_epi32(s))};
}
inline I iload(const int32_t* p) { return {_mm512_loadu_si512(p)}; }
inline I iadd(I x, I y) { return {_mm512_add_epi32(x.v, y.v)}; }
inline I or_where(I code, M m, I bits) { return {_mm512_mask_or_epi32(code.v, m.m, code.v, bits.v)}; }
inline void istore(int32_t* p, I v, M m) { _mm512_mask_storeu_epi32(p, m.m, v.v); }
inline F gather(const float* base, I idx, M m) {
  return {_mm512_mask_i32gather_ps(_mm512_setzero_ps(), m.m, idx.v, base, 4)};
}
// The components of 16 whole chunks (16 tau consecutive floats at src) as tau vectors: lane l
// of z[i] is chunk l's component i. The tau vectors are loaded and each z[i] is put together
// from two-source permutes of consecutive pairs of them: the gathers this replaces took more
// than half of the codes' time (docs/benchmarks.md, "Fetching by loads, and the table
// gradient's writes").
class ChunkTranspose {
 public:
  explicit ChunkTranspose(int tau) : tau_(tau), pairs_((tau + 1) / 2) {
    for (int i = 0; i < tau; ++i)
      for (int m = 0; m < pairs_; ++m) {
        alignas(64) int32_t ix[16];
        unsigned mk = 0;
        for (int l = 0; l < 16; ++l) {
          const int at = l * tau + i - 32 * m;  // the float's place in the pair (v[2m], v[2m + 1])
          const bool here = at >= 0 && at < 32;
          ix[l] = here ? at : 0;
          mk |= here ? 1u << l : 0u;
        }
        idx_[i][m] = _mm512_load_si512(ix);
        mask_[i][m] = static_cast<__mmask16>(mk);
      }
  }
  void operator()(const float* src, F* z) const {
    __m512 v[kMaxHashBits + 1];
    for (int q = 0; q < tau_; ++q) v[q] = _mm512_loadu_ps(src + 16 * q);
    v[tau_] = _mm512_setzero_ps();  // an odd tau's last pair has one vector: no lane reads this
    for (int i = 0; i < tau_; ++i) {
      __m512 out = _mm512_maskz_permutex2var_ps(mask_[i][0], v[0], idx_[i][0], v[1]);
      for (int m = 1; m < pairs_; ++m)
        out = _mm512_mask_blend_ps(mask_[i][m], out, _mm512_permutex2var_ps(v[2 * m], idx_[i][m], v[2 * m + 1]));
      z[i] = {out};
    }
  }

 private:
  int tau_, pairs_;
  __m512i idx_[kMaxHashBits][(kMaxHashBits + 1) / 2];
  __mmask16 mask_[kMaxHashBits][(kMaxHashBits + 1) / 2];
};
inline I bits_of(F x) { return {_mm512_castps_si512(x.v)}; }
inline F from_bits(I x) { return {_mm512_castsi512_ps(x.v)}; }
inline I imin(I x, I y) { return {_mm512_min_epi32(x.v, y.v)}; }
inline I ineg(I x) { return {_mm512_sub_epi32(_mm512_setzero_si512(), x.v)}; }
inline I trunc_int(F x) { return {_mm512_cvttps_epi32(x.v)}; }
inline F to_float(I x) { return {_mm512_cvtepi32_ps(x.v)}; }
inline F fnma(F x, F y, F z) { return {_mm512_fnmadd_ps(x.v, y.v, z.v)}; }
inline I shl23(I x) { return {_mm512_slli_epi32(x.v, 23)}; }

// Sums of the 16 vectors v[slot_of(q)], q = 0..15, in q order. Each vector is summed by the
// tree (l, l+8), (l, l+4), (l, l+2), (l, l+1): 256-bit halves, then 128-bit quarters, then
// pairs inside 128-bit lanes, sixteen vectors at a time.
inline __m512 reduce(const F* v) {
  __m512 w[8], x[4], y[2];
  for (int i = 0; i < 8; ++i)
    w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i].v, v[2 * i + 1].v, 0x44),
                         _mm512_shuffle_f32x4(v[2 * i].v, v[2 * i + 1].v, 0xEE));
  for (int i = 0; i < 4; ++i)
    x[i] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)
    y[i] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0x44), _mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
}
inline void add_sums(float* dst, __m512 sums, int n) {
  const __mmask16 m = static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
  _mm512_mask_storeu_ps(dst, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst), sums));
}
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void store_fence() { _mm_sfence(); }

inline F widen(const Bf16* p) {
  return {_mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16))};
}
inline F widen(const Half* p) { return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))}; }
template <class E>
inline void pack_piece(const E* src, E* dst) {  // as in avx2
  const __m512i* s = reinterpret_cast<const __m512i*>(src);
  __m512i* d = reinterpret_cast<__m512i*>(dst);
  for (size_t i = 0; i < 32 * sizeof(E) / 64; ++i) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
}
template <>
inline void pack_piece(const Bf16* src, Bf16* dst) {
  const __m256i* s = reinterpret_cast<const __m256i*>(src);
  _mm512_storeu_si512(dst, _mm512_or_si512(_mm512_cvtepu16_epi32(_mm256_loadu_si256(s)),
                                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(s + 1)), 16)));
}
inline void packed_piece(const float* p, F& a, F& b) {
  a = load(p);
  b = load(p + 16);
}
inline void packed_piece(const Half* p, F& a, F& b) {
  a = widen(p);
  b = widen(p + 16);
}
inline void packed_piece(const Bf16* p, F& a, F& b) {
  const __m512i w = _mm512_loadu_si512(p);
  a = {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
  b = {_mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))))};
}

#include "kernels/hashed_lookup_cpu_simd.inc"

}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

#endif  // MNEMO_X86_SIMD

// ---- dispatch -----------------------------------------------------------------------------------

std::atomic<int> g_isa{-1};

CpuIsa detect_best() {
#if MNEMO_X86_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return CpuIsa::kAvx512;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);  // not every compiler's builtin knows it
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kPortable;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return "portable";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "?";
}

CpuIsa parse_cpu_isa(const std::string& name) {
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512})
    if (name == cpu_isa_name(isa)) return isa;
  throw std::invalid_argument("CPU kernel path '" + name + "' is unknown: use portable, avx2 or avx512");
}

bool cpu_isa_supported(CpuIsa isa) {
  static const CpuIsa best = detect_best();
  return static_cast<int>(isa) <= static_cast<int>(best);
}

CpuIsa cpu_isa_best() {
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2})
    if (cpu_isa_supported(isa)) return isa;
  return CpuIsa::kPortable;
}

void set_cpu_isa(CpuIsa isa) {
  if (!cpu_isa_supported(isa))
    throw std::invalid_argument(std::string("CPU kernel path '") + cpu_isa_name(isa) +
                                "' cannot run here (this CPU or build supports up to '" +
                                cpu_isa_name(cpu_isa_best()) + "')");
  g_isa.store(static_cast<int>(isa));
}

CpuIsa cpu_isa() {
  const int v = g_isa.load();
  if (v >= 0) return static_cast<CpuIsa>(v);
  CpuIsa isa = cpu_isa_best();
  if (const char* env = std::getenv("MNEMO_CPU_KERNELS"); env && *env) {
    try {
      isa = parse_cpu_isa(env);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("MNEMO_CPU_KERNELS: ") + e.what());
    }
    if (!cpu_isa_supported(isa))
      throw std::invalid_argument(std::string("MNEMO_CPU_KERNELS=") + env + ": this CPU or build supports up to '" +
                                  cpu_isa_name(cpu_isa_best()) + "'");
  }
  int expected = -1;
  g_isa.compare_exchange_strong(expected, static_cast<int>(isa));
  return static_cast<CpuIsa>(g_isa.load());
}

// ---- entry points -------------------------------------------------------------------------------

namespace {

// Runs the forward on the selected path for table elements E: `tables` in their own layout
// (packed == false) or packed ahead of time (packed == true).
template <class E>
void forward_any(const float* x, const E* tables, bool packed, float* y, int32_t* bucket, float* p, int64_t n,
                 int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf,
                 HashedForwardPhases* phases = nullptr) {
  const E* plain = packed ? nullptr : tables;
  const E* pre = packed ? tables : nullptr;
  HashedForwardPhases* ph = pf ? nullptr : phases;  // the phases of one thread only
  switch (cpu_isa()) {
#if MNEMO_X86_SIMD
    case CpuIsa::kAvx512: return avx512::forward(x, plain, pre, y, bucket, p, n, k, tau, d_out, temperature, pf, ph);
    case CpuIsa::kAvx2: return avx2::forward(x, plain, pre, y, bucket, p, n, k, tau, d_out, temperature, pf, ph);
#endif
    default:
      return portable_forward(x, TableRows<E>{tables, packed, k, int64_t{1} << tau, d_out}, y, bucket, p, n, k, tau,
                              d_out, temperature, pf);
  }
}

template <class E>
void backward_input_any(const float* x, const E* tables, bool packed, const int32_t* bucket, const float* p,
                        const float* dy, float* dx, int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                        const ParallelFor& pf) {
  const E* plain = packed ? nullptr : tables;
  const E* pre = packed ? tables : nullptr;
  switch (cpu_isa()) {
#if MNEMO_X86_SIMD
    case CpuIsa::kAvx512:
      return avx512::backward_input(x, plain, pre, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
    case CpuIsa::kAvx2:
      return avx2::backward_input(x, plain, pre, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
#endif
    default:
      return portable_backward_input(x, TableRows<E>{tables, packed, k, int64_t{1} << tau, d_out}, bucket, p, dy, dx,
                                     n, k, tau, d_out, temperature, pf);
  }
}

// Calls fn(static_cast<const E*>(tables)) with E the element type of table_type.
template <class Fn>
void with_table_type(TableType table_type, const void* tables, const char* what, Fn&& fn) {
  switch (table_type) {
    case TableType::kFloat32: return fn(static_cast<const float*>(tables));
    case TableType::kBFloat16: return fn(static_cast<const Bf16*>(tables));
    case TableType::kFloat16: return fn(static_cast<const Half*>(tables));
  }
  throw std::invalid_argument(std::string(what) + ": unknown table type");
}

}  // namespace

double hashed_lookup_gather_probe_gbs(double seconds) {
  switch (cpu_isa()) {
#if MNEMO_X86_SIMD
    case CpuIsa::kAvx512: return avx512::gather_probe_gbs(seconds);
    case CpuIsa::kAvx2: return avx2::gather_probe_gbs(seconds);
#endif
    default: return 0.0;
  }
}

void hashed_lookup_forward_cpu(const float* x, const void* tables, TableType table_type, float* y, int32_t* bucket,
                               float* p, int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                               const ParallelFor& pf) {
  with_table_type(table_type, tables, "hashed_lookup_forward_cpu", [&](auto* t) {
    forward_any(x, t, /*packed=*/false, y, bucket, p, n, k, tau, d_out, temperature, pf);
  });
}
void hashed_lookup_forward_cpu(const float* x, const float* tables, float* y, int32_t* bucket, float* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  forward_any(x, tables, /*packed=*/false, y, bucket, p, n, k, tau, d_out, temperature, pf);
}
namespace {
// Both packed forwards: timed by phases when `phases` is given (one thread only).
void forward_packed(const float* x, const void* packed, TableType table_type, float* y, int32_t* bucket, float* p,
                    int64_t n, int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf,
                    HashedForwardPhases* phases) {
  with_table_type(table_type, packed, "hashed_lookup_forward_packed_cpu", [&](auto* t) {
    forward_any(x, t, /*packed=*/true, y, bucket, p, n, k, tau, d_out, temperature, pf, phases);
  });
}
}  // namespace
void hashed_lookup_forward_packed_cpu(const float* x, const void* packed, TableType table_type, float* y,
                                      int32_t* bucket, float* p, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf) {
  forward_packed(x, packed, table_type, y, bucket, p, n, k, tau, d_out, temperature, pf, nullptr);
}
void hashed_lookup_forward_packed_cpu(const float* x, const void* packed, TableType table_type, float* y,
                                      int32_t* bucket, float* p, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, HashedForwardPhases& phases) {
  forward_packed(x, packed, table_type, y, bucket, p, n, k, tau, d_out, temperature, {}, &phases);
}

int64_t hashed_packed_elems(int64_t k, int tau, int64_t d_out) {
  return (d_out + kHashedPackCols - 1) / kHashedPackCols * k * (int64_t{1} << tau) * kHashedPackCols;
}

void hashed_pack_tables_cpu(const void* tables, TableType table_type, void* packed, int64_t k, int tau, int64_t d_out,
                            const ParallelFor& pf) {
  with_table_type(table_type, tables, "hashed_pack_tables_cpu", [&](auto* t) {
    using E = std::remove_const_t<std::remove_pointer_t<decltype(t)>>;
    E* out = static_cast<E*>(packed);
    const int64_t rows = int64_t{1} << tau;
    switch (cpu_isa()) {  // the same layout on every path
#if MNEMO_X86_SIMD
      case CpuIsa::kAvx512: return avx512::pack_tables(t, out, k, rows, d_out, pf);
      case CpuIsa::kAvx2: return avx2::pack_tables(t, out, k, rows, d_out, pf);
#endif
      default: return pack_tables(t, out, k, rows, d_out, pf);
    }
  });
}
void hashed_lookup_forward_cpu(const double* x, const double* tables, double* y, int32_t* bucket, double* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  portable_forward(x, tables, y, bucket, p, n, k, tau, d_out, temperature, pf);
}

void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf) {
  switch (cpu_isa()) {
#if MNEMO_X86_SIMD
    case CpuIsa::kAvx512: return avx512::backward_tables(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
    case CpuIsa::kAvx2: return avx2::backward_tables(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
#endif
    default: return portable_backward_tables(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
  }
}
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const double* p, const double* dy, double* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf) {
  portable_backward_tables(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
}

void hashed_lookup_backward_input_cpu(const float* x, const void* tables, TableType table_type, const int32_t* bucket,
                                      const float* p, const float* dy, float* dx, int64_t n, int64_t k, int tau,
                                      int64_t d_out, double temperature, const ParallelFor& pf) {
  with_table_type(table_type, tables, "hashed_lookup_backward_input_cpu", [&](auto* t) {
    backward_input_any(x, t, /*packed=*/false, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
  });
}
void hashed_lookup_backward_input_cpu(const float* x, const float* tables, const int32_t* bucket, const float* p,
                                      const float* dy, float* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf) {
  backward_input_any(x, tables, /*packed=*/false, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
}
void hashed_lookup_backward_input_packed_cpu(const float* x, const void* packed, TableType table_type,
                                             const int32_t* bucket, const float* p, const float* dy, float* dx,
                                             int64_t n, int64_t k, int tau, int64_t d_out, double temperature,
                                             const ParallelFor& pf) {
  with_table_type(table_type, packed, "hashed_lookup_backward_input_packed_cpu", [&](auto* t) {
    backward_input_any(x, t, /*packed=*/true, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
  });
}
void hashed_lookup_backward_input_cpu(const double* x, const double* tables, const int32_t* bucket, const double* p,
                                      const double* dy, double* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf) {
  portable_backward_input(x, tables, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
}

}  // namespace mnemo::kernels
