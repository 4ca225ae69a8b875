// CPU kernels of the optimizer step: AdamW's update of one float32 parameter in one pass, and
// the sum of squares behind gradient-norm clipping, in double.
//
// LibTorch 1.13's torch::optim::AdamW runs the update as seven tensor ops per parameter
// (p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g; d = sqrt(v) / sqrt(bc2) + eps;
// p += -lr / bc1 * m / d, with d and sqrt(v) fresh tensors), each a pass over memory; here
// every element is read and written once. The arithmetic is the same float operations in the
// same order as those ops' vectorised CPU kernels in Debian's LibTorch 1.13 (both moment
// updates as fused multiply-adds, as ATen's add_ with alpha and its compiled addcmul_ round;
// the division by sqrt(bc2) a division, not a multiply by the reciprocal), so the results are
// torch::optim::AdamW's bit for bit there (tests/kernels/test_adamw_cpu.cpp checks it against
// the installed LibTorch; docs/benchmarks.md, "bench optimizer", has the speed). Formulas: Loshchilov & Hutter, AdamW
// (docs/references.md).
//
// Paths: AVX-512, AVX2 + FMA and portable, chosen as the hashed-lookup kernels' (cpu_isa() in
// kernels/hashed_lookup_cpu.h, MNEMO_CPU_KERNELS); all three give the same bits.
#pragma once

#include <cstdint>

namespace mnemo::kernels {

// One step's coefficients for one parameter, as torch::optim::AdamW computes them in double
// and ATen hands them to its float kernels (each rounded to float once).
struct AdamWCoefficients {
  bool decay = false;        // weight decay != 0: p is first multiplied by keep
  float keep = 1.0f;         // 1 - lr * weight_decay
  float beta1 = 0.9f, one_minus_beta1 = 0.1f;
  float beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float sqrt_bias_correction2 = 1.0f;  // sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float neg_step_size = 0.0f;          // -lr / (1 - beta1^step)
};

// The coefficients of step `step` (1 for the first) with the given hyper-parameters.
AdamWCoefficients adamw_coefficients(double lr, double beta1, double beta2, double eps, double weight_decay,
                                     int64_t step);

// Elements [0, n) of one parameter p, its gradient g and its moments m (exp_avg) and v
// (exp_avg_sq), updated in place. The arrays must not overlap.
void adamw_update_cpu(float* p, const float* g, float* m, float* v, int64_t n, const AdamWCoefficients& c);

// sum x_i^2 over [0, n), each square and the sum in double (a float's square is exact in
// double), in 32 interleaved partial sums: the same bits on every path, but not those of
// ATen's sum, whose order differs (the last bits of a norm).
double sum_of_squares_cpu(const float* x, int64_t n);

}  // namespace mnemo::kernels
