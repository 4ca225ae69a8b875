// CPU reference of the hashed lookup (see hashed_lookup_cpu.h for the maths and layout).
//
// Why the loops look the way they do:
// * Gathers read table rows (never a one-hot product) in a table-major, column-blocked order
//   (see "table-major column-block loops" below) so each table slab is reused from cache by
//   every row that hits it; y[r] is still summed in table order j = 0..k-1.
// * Every output element is owned by one task, and sums run in a fixed order (tables for y,
//   rows for the table gradient, column blocks for the input gradient): no atomics, and the
//   results are bit-identical for any thread count or task order.
// * exp() of float inputs is a branch-free Cephes-style polynomial the compiler vectorises;
//   std::exp is a scalar libm call per element, which made the codes as slow as the gather.
#include "kernels/hashed_lookup_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace mnemo::kernels {

namespace {

// Compile with the widest vector unit the CPU has, chosen at load time (GCC/Clang ifunc).
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(__clang__)
#define MNEMO_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MNEMO_MULTIVERSION
#endif

void run(const ParallelFor& pf, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  if (pf) pf(n, std::max<int64_t>(1, grain), body);
  else body(0, n);
}

// e^-a for a >= 0, a clamped at 80 (e^-80 ~ 1.8e-35 is still a normal float, and 1 + e^-a
// is 1 from a ~ 17 on). The clamp works on the bits (non-negative floats order like their
// bit patterns) because a float compare would keep GCC from vectorising the loop; it maps
// NaN to 80 too, so codes_rows restores NaN itself. Range reduction -a = n ln2 + r,
// |r| <= ln2/2 (ln2 split in two for accuracy), a degree-6 minimax polynomial for e^r, and
// 2^n through the exponent bits.
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

// e[j] = exp(-2 |x[j]| / t) for one row.
template <typename T>
MNEMO_MULTIVERSION void row_exp(const T* x, T* e, int64_t d, T two_over_t) {
  for (int64_t j = 0; j < d; ++j) e[j] = exp_neg(two_over_t * std::fabs(x[j]));
}

// Codes and p of rows [r0, r1).
template <typename T>
void codes_rows(const T* x, int32_t* bucket, T* p, int64_t r0, int64_t r1, int64_t k, int tau, double temperature) {
  const int64_t d_in = k * tau;
  const T two_over_t = static_cast<T>(2.0 / temperature);
  std::vector<T> e(static_cast<size_t>(d_in));
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * d_in;
    row_exp(xr, e.data(), d_in, two_over_t);
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

// ---- table-major column-block loops -------------------------------------------------------
//
// Every pass below has the shape
//     for column block cb (kCols<T> columns):  for table j:  for row r in a tile of rows:
//         op(row piece [r, cb], table piece T_j[h(r, j), cb])
// so a table's slab for the block (2^tau x kCols) sits in L1/L2 while every row of the tile
// that hits it is served, and the tile's row pieces (kTileRows x kCols) stay in L2. A table
// slab is read about once per tile instead of once per lookup: for d = 512, tau = 8,
// K = 64, N = 2048 that is 32 MiB of table traffic instead of 256 MiB (the row-major loop
// streamed every looked-up row, 2 KiB each, and was memory-bound at ~4x the time).
// Codes are transposed to [K, N] first so the inner loop reads them contiguously.

template <typename T>
constexpr int64_t kCols = 256 / static_cast<int64_t>(sizeof(T));  // 64 floats / 32 doubles: 256-byte pieces
constexpr int64_t kTileRows = 2048;

struct Blocks {
  int64_t col_blocks, tiles;
};

template <typename T>
Blocks blocks(int64_t n, int64_t d_out) {
  return {(d_out + kCols<T> - 1) / kCols<T>, (n + kTileRows - 1) / kTileRows};
}

// bucket/p [n, k] -> [k, n].
template <typename T>
void transpose_codes(const int32_t* bucket, const T* p, int32_t* bt, T* pt, int64_t n, int64_t k,
                     const ParallelFor& pf) {
  run(pf, k, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t r = 0; r < n; ++r) {
        bt[j * n + r] = bucket[r * k + j];
        pt[j * n + r] = p[r * k + j];
      }
  });
}

template <typename T>
inline void prefetch_piece(const T* piece) {
  const char* b = reinterpret_cast<const char*>(piece);
  for (int64_t o = 0; o < kCols<T> * static_cast<int64_t>(sizeof(T)); o += 64) __builtin_prefetch(b + o);
}

// dst[0..w) += a * src[0..w); W > 0 is the compile-time width (the full-block case).
template <typename T, int64_t W>
inline void axpy_piece(T* __restrict dst, const T* __restrict src, T a, int64_t w) {
  if constexpr (W > 0) {
#pragma GCC ivdep
    for (int64_t c = 0; c < W; ++c) dst[c] += a * src[c];
  } else {
#pragma GCC ivdep
    for (int64_t c = 0; c < w; ++c) dst[c] += a * src[c];
  }
}

// a[0..w) . b[0..w) with 16 independent partial sums in a fixed order (GCC vectorises this
// shape without reassociating; with 8 partial sums it did not and was 10x slower).
template <typename T, int64_t W>
inline T dot_piece(const T* __restrict a, const T* __restrict b, int64_t w) {
  const int64_t n = W > 0 ? W : w;
  T part[16] = {};
  const int64_t n16 = n / 16 * 16;
  for (int64_t c = 0; c < n16; c += 16)
    for (int l = 0; l < 16; ++l) part[l] += a[c + l] * b[c + l];
  T s = 0;
  for (int l = 0; l < 16; ++l) s += part[l];
  for (int64_t c = n16; c < n; ++c) s += a[c] * b[c];
  return s;
}

// Row pieces are worked on in packed, contiguous copies: rows of the tensors are d_out
// apart (2 KiB for d = 512), and thousands of 256-byte pieces at a power-of-two stride map
// to a few cache sets and evict each other (the unpacked loop was no faster than streaming
// whole rows). A table slab is packed too when it is small and enough rows use it.
template <typename T>
struct Packed {
  std::vector<T> rows;     // [rows, kCols] pieces of the tile
  std::vector<T> slab[4];  // [2^tau, kCols] pieces of up to four tables, when packed
};

template <typename T>
void pack_rows(const T* src, T* dst, int64_t r0, int64_t r1, int64_t c0, int64_t w, int64_t d_out) {
  for (int64_t r = r0; r < r1; ++r) std::copy_n(src + r * d_out + c0, w, dst + (r - r0) * kCols<T>);
}

template <typename T>
void unpack_rows(const T* src, T* dst, int64_t r0, int64_t r1, int64_t c0, int64_t w, int64_t d_out) {
  for (int64_t r = r0; r < r1; ++r) std::copy_n(src + (r - r0) * kCols<T>, w, dst + r * d_out + c0);
}

// The slab T_j[:, c0:c0+w) as (pointer, row stride): packed when worth it.
template <typename T>
std::pair<const T*, int64_t> slab_of(const T* tj, std::vector<T>& buf, int64_t rows_per_table, int64_t tile_rows,
                                     int64_t w, int64_t d_out) {
  const bool pack = rows_per_table * kCols<T> * static_cast<int64_t>(sizeof(T)) <= 256 * 1024 &&
                    tile_rows * 4 >= rows_per_table;
  if (!pack) return {tj, d_out};
  buf.resize(static_cast<size_t>(rows_per_table * kCols<T>));
  for (int64_t h = 0; h < rows_per_table; ++h) std::copy_n(tj + h * d_out, w, buf.data() + h * kCols<T>);
  return {buf.data(), kCols<T>};
}

// y[r0:r1, c0:c0+w) = sum_j p T_j[h] in table order. Four tables per pass over the rows,
// so a row piece is loaded and stored once per four tables (the adds stay in order).
template <typename T, int64_t W>
MNEMO_MULTIVERSION void gather_block(const T* tables, const int32_t* bt, const T* pt, T* y, int64_t n, int64_t r0,
                                     int64_t r1, int64_t c0, int64_t w, int64_t k, int64_t rows_per_table,
                                     int64_t d_out, Packed<T>& pk) {
  pk.rows.assign(static_cast<size_t>((r1 - r0) * kCols<T>), T(0));
  T* yp = pk.rows.data() - r0 * kCols<T>;  // yp + r * kCols<T> is row r's piece
  const int64_t table_elems = rows_per_table * d_out;
  int64_t j = 0;
  for (; j + 4 <= k; j += 4) {
    const T* s[4];
    int64_t st[4];
    for (int q = 0; q < 4; ++q) {
      const auto sl = slab_of(tables + (j + q) * table_elems + c0, pk.slab[q], rows_per_table, r1 - r0, w, d_out);
      s[q] = sl.first;
      st[q] = sl.second;
    }
    const int32_t *h0 = bt + j * n, *h1 = h0 + n, *h2 = h1 + n, *h3 = h2 + n;
    const T *p0 = pt + j * n, *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
    const int64_t wn = W > 0 ? W : w;
    for (int64_t r = r0; r < r1; ++r) {
      T* __restrict yr = yp + r * kCols<T>;
      const T* __restrict a0 = s[0] + h0[r] * st[0];
      const T* __restrict a1 = s[1] + h1[r] * st[1];
      const T* __restrict a2 = s[2] + h2[r] * st[2];
      const T* __restrict a3 = s[3] + h3[r] * st[3];
      const T q0 = p0[r], q1 = p1[r], q2 = p2[r], q3 = p3[r];
#pragma GCC ivdep
      for (int64_t c = 0; c < wn; ++c) {
        T v = yr[c];
        v += q0 * a0[c];
        v += q1 * a1[c];
        v += q2 * a2[c];
        v += q3 * a3[c];
        yr[c] = v;
      }
    }
  }
  for (; j < k; ++j) {
    const int32_t* hb = bt + j * n;
    const T* pp = pt + j * n;
    const auto [tj, stride] = slab_of(tables + j * table_elems + c0, pk.slab[0], rows_per_table, r1 - r0, w, d_out);
    for (int64_t r = r0; r < r1; ++r) axpy_piece<T, W>(yp + r * kCols<T>, tj + hb[r] * stride, pp[r], w);
  }
  unpack_rows(pk.rows.data(), y, r0, r1, c0, w, d_out);
}

// g[j, r] for rows [r0, r1) over columns [c0, c0+w) only: dot(dy[r, cb], T_j[h, cb]).
template <typename T, int64_t W>
MNEMO_MULTIVERSION void dots_block(const T* tables, const int32_t* bt, const T* dy, T* g, int64_t n, int64_t r0,
                                   int64_t r1, int64_t c0, int64_t w, int64_t k, int64_t rows_per_table,
                                   int64_t d_out, Packed<T>& pk) {
  pk.rows.resize(static_cast<size_t>((r1 - r0) * kCols<T>));
  pack_rows(dy, pk.rows.data(), r0, r1, c0, w, d_out);
  const T* dp = pk.rows.data() - r0 * kCols<T>;
  for (int64_t j = 0; j < k; ++j) {
    const int32_t* hb = bt + j * n;
    const auto [tj, stride] = slab_of(tables + j * rows_per_table * d_out + c0, pk.slab[0], rows_per_table, r1 - r0, w, d_out);
    T* gj = g + j * n;
    for (int64_t r = r0; r < r1; ++r) {
      if (r + 8 < r1) prefetch_piece(tj + hb[r + 8] * stride);
      gj[r] = dot_piece<T, W>(dp + r * kCols<T>, tj + hb[r] * stride, w);
    }
  }
}

// d_tables[j0:j1, :, c0:c0+w) += p dy over rows [r0, r1), rows in order. `acc` holds the
// packed slabs of tables j0..j1 ([j1 - j0, 2^tau, kCols]), written back by the caller.
template <typename T, int64_t W>
MNEMO_MULTIVERSION void scatter_block(const int32_t* bt, const T* pt, const T* dy, T* acc, int64_t n, int64_t r0,
                                      int64_t r1, int64_t c0, int64_t w, int64_t j0, int64_t j1,
                                      int64_t rows_per_table, int64_t d_out, Packed<T>& pk) {
  pk.rows.resize(static_cast<size_t>((r1 - r0) * kCols<T>));
  pack_rows(dy, pk.rows.data(), r0, r1, c0, w, d_out);
  const T* dp = pk.rows.data() - r0 * kCols<T>;
  for (int64_t j = j0; j < j1; ++j) {
    const int32_t* hb = bt + j * n;
    const T* pp = pt + j * n;
    T* aj = acc + (j - j0) * rows_per_table * kCols<T>;
    for (int64_t r = r0; r < r1; ++r) axpy_piece<T, W>(aj + hb[r] * kCols<T>, dp + r * kCols<T>, pp[r], w);
  }
}

template <typename T>
void forward_impl(const T* x, const T* tables, T* y, int32_t* bucket, T* p, int64_t n, int64_t k, int tau,
                  int64_t d_out, double temperature, const ParallelFor& pf) {
  const int64_t d_in = k * tau;
  const int64_t rows_per_table = int64_t{1} << tau;
  run(pf, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, d_in)),
      [&](int64_t r0, int64_t r1) { codes_rows(x, bucket, p, r0, r1, k, tau, temperature); });
  std::vector<int32_t> bt(static_cast<size_t>(n * k));
  std::vector<T> pt(static_cast<size_t>(n * k));
  transpose_codes(bucket, p, bt.data(), pt.data(), n, k, pf);
  const Blocks b = blocks<T>(n, d_out);
  // Task t: column block t / tiles (slowest), row tile t % tiles. Tasks write disjoint parts of y.
  run(pf, b.col_blocks * b.tiles, 1, [&](int64_t t0, int64_t t1) {
    Packed<T> pk;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c0 = (t / b.tiles) * kCols<T>, w = std::min(kCols<T>, d_out - c0);
      const int64_t r0 = (t % b.tiles) * kTileRows, r1 = std::min(n, r0 + kTileRows);
      if (w == kCols<T>)
        gather_block<T, kCols<T>>(tables, bt.data(), pt.data(), y, n, r0, r1, c0, w, k, rows_per_table, d_out, pk);
      else
        gather_block<T, 0>(tables, bt.data(), pt.data(), y, n, r0, r1, c0, w, k, rows_per_table, d_out, pk);
    }
  });
}

template <typename T>
void backward_tables_impl(const int32_t* bucket, const T* p, const T* dy, T* d_tables, int64_t n, int64_t k, int tau,
                          int64_t d_out, const ParallelFor& pf) {
  const int64_t rows_per_table = int64_t{1} << tau;
  std::vector<int32_t> bt(static_cast<size_t>(n * k));
  std::vector<T> pt(static_cast<size_t>(n * k));
  transpose_codes(bucket, p, bt.data(), pt.data(), n, k, pf);
  const Blocks b = blocks<T>(n, d_out);
  // A task owns (column block, group of tables): it accumulates their packed slabs
  // (<= ~256 KiB, cached) over the rows in order, tile by tile, so every element's sum runs
  // in row order, then writes them out.
  const int64_t slab = rows_per_table * kCols<T> * static_cast<int64_t>(sizeof(T));
  const int64_t group = std::clamp<int64_t>((256 * 1024) / slab, 1, k);
  const int64_t groups = (k + group - 1) / group;
  run(pf, b.col_blocks * groups, 1, [&](int64_t t0, int64_t t1) {
    Packed<T> pk;
    std::vector<T> acc;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c0 = (t / groups) * kCols<T>, w = std::min(kCols<T>, d_out - c0);
      const int64_t j0 = (t % groups) * group, j1 = std::min(k, j0 + group);
      acc.assign(static_cast<size_t>((j1 - j0) * rows_per_table * kCols<T>), T(0));
      for (int64_t r0 = 0; r0 < n; r0 += kTileRows) {
        const int64_t r1 = std::min(n, r0 + kTileRows);
        if (w == kCols<T>)
          scatter_block<T, kCols<T>>(bt.data(), pt.data(), dy, acc.data(), n, r0, r1, c0, w, j0, j1, rows_per_table,
                                     d_out, pk);
        else
          scatter_block<T, 0>(bt.data(), pt.data(), dy, acc.data(), n, r0, r1, c0, w, j0, j1, rows_per_table, d_out,
                              pk);
      }
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t h = 0; h < rows_per_table; ++h)
          std::copy_n(acc.data() + ((j - j0) * rows_per_table + h) * kCols<T>, w,
                      d_tables + (j * rows_per_table + h) * d_out + c0);
    }
  });
}

template <typename T>
void backward_input_impl(const T* x, const T* tables, const int32_t* bucket, const T* p, const T* dy, T* dx, int64_t n,
                         int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  const int64_t d_in = k * tau;
  const int64_t rows_per_table = int64_t{1} << tau;
  const T two_over_t = static_cast<T>(2.0 / temperature);
  std::vector<int32_t> bt(static_cast<size_t>(n * k));
  std::vector<T> pt(static_cast<size_t>(n * k));
  transpose_codes(bucket, p, bt.data(), pt.data(), n, k, pf);
  const Blocks b = blocks<T>(n, d_out);
  // Partial dots per column block, [col_blocks, k, n], summed below in block order.
  std::vector<T> g(static_cast<size_t>(b.col_blocks * k * n));
  run(pf, b.col_blocks * b.tiles, 1, [&](int64_t t0, int64_t t1) {
    Packed<T> pk;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t cb = t / b.tiles;
      const int64_t c0 = cb * kCols<T>, w = std::min(kCols<T>, d_out - c0);
      const int64_t r0 = (t % b.tiles) * kTileRows, r1 = std::min(n, r0 + kTileRows);
      T* gb = g.data() + cb * k * n;
      if (w == kCols<T>)
        dots_block<T, kCols<T>>(tables, bt.data(), dy, gb, n, r0, r1, c0, w, k, rows_per_table, d_out, pk);
      else
        dots_block<T, 0>(tables, bt.data(), dy, gb, n, r0, r1, c0, w, k, rows_per_table, d_out, pk);
    }
  });
  // g[0] += g[cb] for cb = 1, 2, ... (contiguous, vectorised; the order is fixed).
  run(pf, k * n, 16384, [&](int64_t e0, int64_t e1) {
    for (int64_t cb = 1; cb < b.col_blocks; ++cb) {
      const T* src = g.data() + cb * k * n;
      for (int64_t e = e0; e < e1; ++e) g[static_cast<size_t>(e)] += src[e];
    }
  });
  run(pf, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, d_in)), [&](int64_t r0, int64_t r1) {
    std::vector<T> e(static_cast<size_t>(d_in));
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * d_in;
      row_exp(xr, e.data(), d_in, two_over_t);
      for (int64_t j = 0; j < k; ++j) {
        const T coef = g[static_cast<size_t>(j * n + r)] * p[r * k + j] * two_over_t;
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

}  // namespace

void hashed_lookup_forward_cpu(const float* x, const float* tables, float* y, int32_t* bucket, float* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  forward_impl(x, tables, y, bucket, p, n, k, tau, d_out, temperature, pf);
}
void hashed_lookup_forward_cpu(const double* x, const double* tables, double* y, int32_t* bucket, double* p, int64_t n,
                               int64_t k, int tau, int64_t d_out, double temperature, const ParallelFor& pf) {
  forward_impl(x, tables, y, bucket, p, n, k, tau, d_out, temperature, pf);
}

void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const float* p, const float* dy, float* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf) {
  backward_tables_impl(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
}
void hashed_lookup_backward_tables_cpu(const int32_t* bucket, const double* p, const double* dy, double* d_tables,
                                       int64_t n, int64_t k, int tau, int64_t d_out, const ParallelFor& pf) {
  backward_tables_impl(bucket, p, dy, d_tables, n, k, tau, d_out, pf);
}

void hashed_lookup_backward_input_cpu(const float* x, const float* tables, const int32_t* bucket, const float* p,
                                      const float* dy, float* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf) {
  backward_input_impl(x, tables, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
}
void hashed_lookup_backward_input_cpu(const double* x, const double* tables, const int32_t* bucket, const double* p,
                                      const double* dy, double* dx, int64_t n, int64_t k, int tau, int64_t d_out,
                                      double temperature, const ParallelFor& pf) {
  backward_input_impl(x, tables, bucket, p, dy, dx, n, k, tau, d_out, temperature, pf);
}

}  // namespace mnemo::kernels
