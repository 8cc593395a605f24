// SiLU / Swish after an f32 1x1 convolution as a pass of our own (swish_pass.hpp).
//
// Why: oneDNN 3.2's eltwise_swish post-op made brgconv_1x1:avx512_core 2.7x slower on
// EfficientNet-B0's first expand convolution (16 -> 96 channels, 112x112; 0.17 ms without an
// activation, 0.18 with ReLU, 0.46 with Swish, one thread, Zen 5 VM): ~0.24 ns an element,
// ~14 cycles a 16-lane vector, on every expand convolution of the model, where ONNX Runtime's
// convolution plus its separate QuickGelu pass took 0.38 ms. Capped to AVX2 brgconv_1x1:avx2
// paid 0.46 ns an element for it (0.31 -> 0.87 ms on that shape). This pass, the exp polynomial
// and the division of our depthwise kernel's Swish (dw_conv_f32_act.inc, included below, so
// both give the same bits), four vectors a step, takes ~0.14 ns an element at AVX-512 on data
// the convolution has just written (compute-bound: the same per element at 56k and 1.2M
// elements), so the convolution without the post-op plus this pass costs less than the fused
// one. Measured on an AMD Zen 5 only (natively and capped to AVX2), hence the vendor in the
// rule: where the division or the extra pass over memory costs more (an Intel core's slower
// vdivps, a host with less cache) the fused post-op may still win.
#include "core/swish_pass.hpp"

#include <immintrin.h>

#include <algorithm>

#include "core/dw_conv_kernel.hpp"
#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

bool amd_cpu() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd") != 0;
#else
  return false;
#endif
}

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {

// the vector primitives dw_conv_f32_act.inc is written over (dw_conv_f32.cpp's AVX-512 set)
using V = __m512;
using Mask = __mmask16;
constexpr int L = 16;
inline Mask tail_mask(int n) { return static_cast<Mask>((1u << n) - 1u); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vset1(float f) { return _mm512_set1_ps(f); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline V vload_tail(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline void vstore_tail(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }  // b where either is NaN
inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vpos_or(V x, V other, V zero) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ), other, x);
}
inline V vscale2(V p, V fn) { return _mm512_scalef_ps(p, fn); }
inline V vround(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

#include "core/dw_conv_f32_act.inc"
#include "core/swish_pass_loop.inc"

}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {

#include "core/f32_avx2_ops.inc"
#include "core/dw_conv_f32_act.inc"
#include "core/swish_pass_loop.inc"

}  // namespace avx2
#pragma GCC pop_options

// The build the pass runs on this host, 0 for none (AVX-512 = 16, AVX2 = 8 lanes)
int pass_lanes() {
  static const int lanes = [] {
    if (!env_switch_on("OPFORGE_CPU_CONV_SWISH_PASS") || !amd_cpu()) return 0;
    if (host_has_avx512()) return 16;
    return host_has_avx2_fma() ? 8 : 0;
  }();
  return lanes;
}

}  // namespace

bool conv_swish_pass_on_this_host() { return pass_lanes() != 0; }

const char* swish_pass_exec_suffix() { return pass_lanes() == 16 ? "+swish:avx512" : "+swish:avx2"; }

void swish_inplace(float* x, int64_t n, float alpha, int threads) {
  if (n <= 0) return;
  const int64_t lanes = pass_lanes() == 16 ? 16 : 8;
  const int64_t vectors = (n + lanes - 1) / lanes;
  // ~8 cycles a vector: a second thread from 32k elements on, as the other element-wise loops
  // (elementwise.hpp threads_for)
  parallel_range(vectors, threads, [&](int64_t v0, int64_t v1) {
    if (lanes == 16) avx512::swish_range(x, v0 * 16, std::min(n, v1 * 16), alpha);
    else avx2::swish_range(x, v0 * 8, std::min(n, v1 * 8), alpha);
  }, 32768 / lanes);
}

}  // namespace opforge_cpu
