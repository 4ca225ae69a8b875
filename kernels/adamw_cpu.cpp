// CPU kernels of the optimizer step (see adamw_cpu.h). This file is compiled with
// -ffp-contract=off (kernels/CMakeLists.txt): every multiply and add below rounds as written,
// the two fused multiply-adds are spelled out, and the three paths give the same bits.
#include "kernels/adamw_cpu.h"

#include "kernels/hashed_lookup_cpu.h"

#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MNEMO_ADAMW_SIMD 1
#include <immintrin.h>
#else
#define MNEMO_ADAMW_SIMD 0
#endif

namespace mnemo::kernels {

AdamWCoefficients adamw_coefficients(double lr, double beta1, double beta2, double eps, double weight_decay,
                                     int64_t step) {
  AdamWCoefficients c;
  c.decay = weight_decay != 0;
  c.keep = static_cast<float>(1 - lr * weight_decay);
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1 - beta2);
  const double bc1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(beta2, static_cast<double>(step));
  c.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bc2));
  c.eps = static_cast<float>(eps);
  c.neg_step_size = static_cast<float>(-(lr / bc1));
  return c;
}

namespace {

// One element, in the order of torch::optim::AdamW's ops (adamw_cpu.h).
inline void update_one(float& p, float g, float& m, float& v, const AdamWCoefficients& c) {
  float pi = p;
  if (c.decay) pi = pi * c.keep;
  float mi = m * c.beta1;
  mi = std::fma(g, c.one_minus_beta1, mi);
  float vi = v * c.beta2;
  vi = std::fma(c.one_minus_beta2 * g, g, vi);
  float d = std::sqrt(vi);
  d = d / c.sqrt_bias_correction2;
  d = d + c.eps;
  pi = pi + c.neg_step_size * mi / d;
  p = pi;
  m = mi;
  v = vi;
}

void update_portable(float* p, const float* g, float* m, float* v, int64_t i0, int64_t n,
                     const AdamWCoefficients& c) {
  for (int64_t i = i0; i < n; ++i) update_one(p[i], g[i], m[i], v[i], c);
}

// The sum of squares in 32 double lanes (lane l holds elements i + l of every full run of
// 32), combined as (l + (l + 8)) + ((l + 16) + (l + 24)), the 8 results summed in order, then
// the tail in order: the AVX-512 path keeps the same lanes, so both give the same bits.
double squares_lanes(const double* t8, const float* x, int64_t i0, int64_t n) {
  double s = 0;
  for (int l = 0; l < 8; ++l) s += t8[l];
  for (int64_t i = i0; i < n; ++i) {
    const double d = x[i];
    s += d * d;
  }
  return s;
}

double squares_portable(const float* x, int64_t n) {
  double lanes[32] = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 32; ++l) {
      const double d = x[i + l];
      lanes[l] += d * d;
    }
  double t8[8];
  for (int l = 0; l < 8; ++l) t8[l] = (lanes[l] + lanes[l + 8]) + (lanes[l + 16] + lanes[l + 24]);
  return squares_lanes(t8, x, i, n);
}

#if MNEMO_ADAMW_SIMD

__attribute__((target("avx512f"))) int64_t update_avx512(float* p, const float* g, float* m, float* v, int64_t n,
                                                          const AdamWCoefficients& c) {
  const __m512 keep = _mm512_set1_ps(c.keep), b1 = _mm512_set1_ps(c.beta1), a1 = _mm512_set1_ps(c.one_minus_beta1);
  const __m512 b2 = _mm512_set1_ps(c.beta2), a2 = _mm512_set1_ps(c.one_minus_beta2);
  const __m512 sbc2 = _mm512_set1_ps(c.sqrt_bias_correction2), eps = _mm512_set1_ps(c.eps);
  const __m512 nss = _mm512_set1_ps(c.neg_step_size);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    __m512 pi = _mm512_loadu_ps(p + i);
    if (c.decay) pi = _mm512_mul_ps(pi, keep);
    const __m512 mi = _mm512_fmadd_ps(gi, a1, _mm512_mul_ps(_mm512_loadu_ps(m + i), b1));
    const __m512 vi = _mm512_fmadd_ps(_mm512_mul_ps(a2, gi), gi, _mm512_mul_ps(_mm512_loadu_ps(v + i), b2));
    const __m512 d = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), sbc2), eps);
    pi = _mm512_add_ps(pi, _mm512_div_ps(_mm512_mul_ps(nss, mi), d));
    _mm512_storeu_ps(p + i, pi);
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
  }
  return i;
}

__attribute__((target("avx2,fma"))) int64_t update_avx2(float* p, const float* g, float* m, float* v, int64_t n,
                                                         const AdamWCoefficients& c) {
  const __m256 keep = _mm256_set1_ps(c.keep), b1 = _mm256_set1_ps(c.beta1), a1 = _mm256_set1_ps(c.one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps(c.beta2), a2 = _mm256_set1_ps(c.one_minus_beta2);
  const __m256 sbc2 = _mm256_set1_ps(c.sqrt_bias_correction2), eps = _mm256_set1_ps(c.eps);
  const __m256 nss = _mm256_set1_ps(c.neg_step_size);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    __m256 pi = _mm256_loadu_ps(p + i);
    if (c.decay) pi = _mm256_mul_ps(pi, keep);
    const __m256 mi = _mm256_fmadd_ps(gi, a1, _mm256_mul_ps(_mm256_loadu_ps(m + i), b1));
    const __m256 vi = _mm256_fmadd_ps(_mm256_mul_ps(a2, gi), gi, _mm256_mul_ps(_mm256_loadu_ps(v + i), b2));
    const __m256 d = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), sbc2), eps);
    pi = _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(nss, mi), d));
    _mm256_storeu_ps(p + i, pi);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
  }
  return i;
}

// squares_portable's 32 lanes in four vectors (a float's square is exact in double, so the
// multiply-add rounds as the portable add does).
__attribute__((target("avx512f"))) double squares_avx512(const float* x, int64_t n) {
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd(), s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512d d0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), d1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
    const __m512d d2 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), d3 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24));
    s0 = _mm512_fmadd_pd(d0, d0, s0);
    s1 = _mm512_fmadd_pd(d1, d1, s1);
    s2 = _mm512_fmadd_pd(d2, d2, s2);
    s3 = _mm512_fmadd_pd(d3, d3, s3);
  }
  double t8[8];
  _mm512_storeu_pd(t8, _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
  return squares_lanes(t8, x, i, n);
}

#endif  // MNEMO_ADAMW_SIMD

}  // namespace

void adamw_update_cpu(float* p, const float* g, float* m, float* v, int64_t n, const AdamWCoefficients& c) {
  int64_t done = 0;
#if MNEMO_ADAMW_SIMD
  switch (cpu_isa()) {
    case CpuIsa::kAvx512: done = update_avx512(p, g, m, v, n, c); break;
    case CpuIsa::kAvx2: done = update_avx2(p, g, m, v, n, c); break;
    default: break;
  }
#endif
  update_portable(p, g, m, v, done, n, c);
}

double sum_of_squares_cpu(const float* x, int64_t n) {
#if MNEMO_ADAMW_SIMD
  if (cpu_isa() == CpuIsa::kAvx512) return squares_avx512(x, n);
#endif
  return squares_portable(x, n);
}

}  // namespace mnemo::kernels
