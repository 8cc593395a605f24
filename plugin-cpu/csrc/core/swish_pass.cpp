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
// one. Measured on an AMD Zen 5 (natively and capped to AVX2) in stop 24, and natively on an Intel
// Emerald Rapids VM (AVX-512 with AMX, 2 vCPUs) in stop 27, where it also won at one thread
// (whole models, same build, pass / post-op: tv_efficientnet_b0 0.81, shufflenet_v2_swish 0.76,
// timm_mobilevit_xs 0.95, efficientnet_b0_like 0.97, tv_efficientnet_v2_s 0.97, timm_rexnet_100
// 0.99) and was level or ahead at two (per model, the mean of both orders 0.97-1.00; kernels.md
// "SiLU after an f32 1x1 convolution"). So AVX-512 takes it on any vendor; the AVX2 build (an
// Intel core's vdivps at 8 lanes, unmeasured) stays AMD's.
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

#include "core/f32_avx512_ops.inc"
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
    if (!env_switch_on("OPFORGE_CPU_CONV_SWISH_PASS")) return 0;
    if (host_has_avx512()) return 16;  // any vendor (see the top of the file)
    return amd_cpu() && host_has_avx2_fma() ? 8 : 0;  // the AVX2 build: measured on AMD only
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
