// f32 activations of the recurrent GEMM path. std::exp/std::tanh are one libm call per element,
// which made the gates cost more than the matrix products; these are branch-free Cephes-style
// approximations (expf: 2^n * polynomial(r), |r| <= ln2/2, ~1 ulp; tanhf: an odd polynomial for
// |x| < 0.625 where 1 - e^-2|x| would cancel, (1 - e) / (1 + e) above, ~2 ulp) that the compiler
// vectorises for the host's ISA (target_clones: the module itself builds for baseline x86-64).
// GCC vectorises the selects below only without trapping math, hence the pragma, which applies
// to this file alone: nothing here depends on floating-point exceptions.
#pragma GCC optimize("no-trapping-math")

#include "core/rnn_activations.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fast_exp.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

namespace {
inline float sigmoid_approx(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

inline float tanh_approx(float x) {
  const float a = std::fabs(x);
  const float z = a * a;
  const float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                        1.33314422036e-1f) * z - 3.33332819422e-1f) * z * a + a;
  const float e = fast_exp(-2.0f * a);
  const float large = (1.0f - e) / (1.0f + e);
  // a NaN fails a < 0.625 and takes `large`, which is NaN too
  return std::copysign(a < 0.625f ? small : large, x);
}
}  // namespace

static inline __attribute__((always_inline)) void activate_loops(Act a, float* v, int64_t n) {
  switch (a) {
    case Act::sigmoid: for (int64_t i = 0; i < n; ++i) v[i] = sigmoid_approx(v[i]); break;
    case Act::tanh: for (int64_t i = 0; i < n; ++i) v[i] = tanh_approx(v[i]); break;
    case Act::relu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0 ? 0.f : v[i]; break;
  }
}
OPFORGE_ISA_CLONES(, "avx512f", activate, activate_loops, (Act a, float* v, int64_t n), (a, v, n))

void activate(Act a, double* v, int64_t n) {
  switch (a) {
    case Act::sigmoid: for (int64_t i = 0; i < n; ++i) v[i] = 1.0 / (1.0 + std::exp(-v[i])); break;
    case Act::tanh: for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]); break;
    case Act::relu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0 ? 0.0 : v[i]; break;
  }
}

}  // namespace opforge_cpu
