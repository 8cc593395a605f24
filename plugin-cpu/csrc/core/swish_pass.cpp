// SiLU / Swish after an f32 1x1 convolution as a pass of our own (swish_pass.hpp).
//
// Why: oneDNN 3.2's eltwise_swish post-op made brgconv_1x1:avx512_core 2.7x slower on
// EfficientNet-B0's first expand convolution (16 -> 96 channels, 112x112; 0.17 ms without an
// activation, 0.18 with ReLU, 0.46 with Swish, one thread, Zen 5 VM): ~0.24 ns an element,
// ~14 cycles a 16-lane vector, on every expand convolution of the model, where ONNX Runtime's
// convolution plus its separate QuickGelu pass took 0.38 ms. This pass, the exp polynomial of
// our depthwise kernel (dw_conv_f32_act.inc, fast_exp.hpp) and one division, four vectors a
// step, takes ~0.14 ns an element on data the convolution has just written (compute-bound:
// the same per element at 56k and 1.2M elements), so the convolution without the post-op plus
// this pass costs less than the fused one. Measured on an AMD Zen 5 only, hence the vendor in
// the rule: where the division or the extra pass over memory costs more (an Intel core's
// slower vdivps, a host with less cache) the fused post-op may still win.
#include "core/swish_pass.hpp"

#include <immintrin.h>

#include <algorithm>

#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

bool conv_swish_pass_on_this_host() {
  static const bool on = [] {
    if (!env_switch_on("OPFORGE_CPU_CONV_SWISH_PASS") || !host_has_avx512()) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
#else
    return false;
#endif
  }();
  return on;
}

namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// e^x as 2^n * e^r with the Cephes polynomial, clamped to [-104, 89] (e^89 overflows to inf):
// dw_conv_f32_act.inc's vexp, so a Swish gives the same bits after a 1x1 convolution as after
// our depthwise one. max/min return their second operand on a NaN, so a NaN x stays NaN.
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.f), _mm512_max_ps(_mm512_set1_ps(-104.f), x));
  const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(fn, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, fn);
}

// x / (1 + e^(-alpha x)), dw_conv_f32_act.inc's order of operations
inline __m512 swish16(__m512 x, __m512 neg_alpha) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.f), exp16(_mm512_mul_ps(x, neg_alpha))));
}

// Elements [b, e) of x; b is a multiple of 16 (the caller splits by vectors).
void swish_range(float* x, int64_t b, int64_t e, float alpha) {
  const __m512 na = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_set1_ps(alpha));
  int64_t i = b;
  // four independent vectors a step: the exp chains of one vector wait on each other's FMAs
  // (0.137 against 0.146 ns an element one vector a step)
  for (; i + 64 <= e; i += 64) {
    const __m512 a0 = swish16(_mm512_loadu_ps(x + i), na), a1 = swish16(_mm512_loadu_ps(x + i + 16), na);
    const __m512 a2 = swish16(_mm512_loadu_ps(x + i + 32), na), a3 = swish16(_mm512_loadu_ps(x + i + 48), na);
    _mm512_storeu_ps(x + i, a0);
    _mm512_storeu_ps(x + i + 16, a1);
    _mm512_storeu_ps(x + i + 32, a2);
    _mm512_storeu_ps(x + i + 48, a3);
  }
  for (; i + 16 <= e; i += 16) _mm512_storeu_ps(x + i, swish16(_mm512_loadu_ps(x + i), na));
  if (i < e) {
    // the last 1-15 elements under a mask: nothing past x + e is read or written
    const __mmask16 m = static_cast<__mmask16>((1u << (e - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, m, swish16(_mm512_maskz_loadu_ps(m, x + i), na));
  }
}

#pragma GCC pop_options

}  // namespace

void swish_inplace(float* x, int64_t n, float alpha, int threads) {
  if (n <= 0) return;
  const int64_t vectors = (n + 15) / 16;
  // ~8 cycles a vector: a second thread from 2048 vectors (32k elements) on, as the other
  // element-wise loops (elementwise.hpp threads_for)
  parallel_range(vectors, threads, [&](int64_t v0, int64_t v1) {
    swish_range(x, v0 * 16, std::min(n, v1 * 16), alpha);
  }, 2048);
}

}  // namespace opforge_cpu
