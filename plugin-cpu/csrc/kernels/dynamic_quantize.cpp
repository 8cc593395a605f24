// DynamicQuantize (opforge_cpu/ops/dynamic_quantize.py, made by passes/int8/dynamic.py): ONNX's
// DynamicQuantizeLinear as one step instead of the ~35 nodes of its function body (two guarded
// reductions, scalar arithmetic, the QuantizeLinear chain). Outputs y (u8, x's shape), the scale
// (f32 scalar) and the zero point (u8 scalar):
//   lo = min(min(x), 0), hi = max(max(x), 0)
//   scale = hi == lo ? 1 : (hi - lo) / 255
//   zp = round_half_even(max(0, min(255, 0 - lo / scale)))
//   y = saturate(round_half_even(x / scale) + zp)            (the Quantize kernel's loop)
// This is ONNX's arithmetic, in its order, with ONNX Runtime's answers where the function body
// leaves the result undefined: an all-zero tensor has scale 1 (the body divides 0 by 0), NaN
// elements take no part in the min/max (ONNX Runtime's MLAS reduction; a tensor of NaNs only
// gives min = max = NaN, so scale NaN and zero point 255 as there), a NaN zero point clamps to
// 255 (std::min/std::max argument order), and NaN elements quantize to 0.
#include <cmath>
#include <limits>
#include <string>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OPFORGE_DQ_AVX512 1
#endif

#include "core/dynamic_u8.hpp"
#include "core/elementwise.hpp"
#include "kernels/common.hpp"
#include "kernels/int8_layout.hpp"
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

namespace {
// (a < m ? a : m) and (a > m ? a : m): a NaN `a` leaves m as it is
inline void min_max_scalar(const float* x, int64_t b, int64_t e, float& lo, float& hi) {
  for (int64_t i = b; i < e; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
}

#ifdef OPFORGE_DQ_AVX512
// 4 x 16 lanes; vminps(a, m) is (a < m ? a : m) per lane (the second operand when either is NaN),
// the scalar loop's rule, so both builds give the same min and max. Returns where the tail starts.
OPFORGE_INT8_AVX512 int64_t min_max_avx512(const float* x, int64_t n, float& lo, float& hi) {
  __m512 l0 = _mm512_set1_ps(lo), l1 = l0, l2 = l0, l3 = l0;
  __m512 h0 = _mm512_set1_ps(hi), h1 = h0, h2 = h0, h3 = h0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
    l0 = _mm512_min_ps(a, l0); h0 = _mm512_max_ps(a, h0);
    l1 = _mm512_min_ps(b, l1); h1 = _mm512_max_ps(b, h1);
    l2 = _mm512_min_ps(c, l2); h2 = _mm512_max_ps(c, h2);
    l3 = _mm512_min_ps(d, l3); h3 = _mm512_max_ps(d, h3);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_loadu_ps(x + i);
    l0 = _mm512_min_ps(a, l0);
    h0 = _mm512_max_ps(a, h0);
  }
  // the accumulators hold no NaN (a NaN never enters), so the lane reductions are plain
  alignas(64) float ls[64], hs[64];
  _mm512_store_ps(ls, l0); _mm512_store_ps(ls + 16, l1); _mm512_store_ps(ls + 32, l2); _mm512_store_ps(ls + 48, l3);
  _mm512_store_ps(hs, h0); _mm512_store_ps(hs + 16, h1); _mm512_store_ps(hs + 32, h2); _mm512_store_ps(hs + 48, h3);
  for (int k = 0; k < 64; ++k) {
    lo = ls[k] < lo ? ls[k] : lo;
    hi = hs[k] > hi ? hs[k] : hi;
  }
  return i;
}
#endif

class DynamicQuantizeKernel : public Kernel {
 public:
  std::string impl_name() const override { return int8_avx512() ? "dynamic_quantize:avx512" : "dynamic_quantize"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float* x = in[0].ptr<float>();
    const int64_t n = in[0].size();
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    int64_t i = 0;
#ifdef OPFORGE_DQ_AVX512
    if (int8_avx512()) i = min_max_avx512(x, n, lo, hi);
#endif
    min_max_scalar(x, i, n, lo, hi);
    if (n > 0 && lo > hi) lo = hi = std::numeric_limits<float>::quiet_NaN();  // no element but NaNs
    if (n == 0) lo = hi = 0.f;
    const DynamicU8Params p = dynamic_u8_params(lo, hi);
    *out[1].ptr<float>() = p.scale;
    *out[2].ptr<uint8_t>() = static_cast<uint8_t>(p.zero_point);
    quantize_u8(ctx, x, out[0].ptr<uint8_t>(), n, p.scale, p.zero_point);
  }
};
}  // namespace

std::string check_dynamic_quantize(const NodeDesc& n) {
  if (n.inputs.size() != 1) return "takes one input";
  if (n.in(0).dtype != DType::f32) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected f32";
  if (n.in(0).blocked) return "input must be plain";
  if (!n.outputs.empty()) {
    if (n.outputs.size() != 3) return "has three outputs (y, scale, zero point)";
    if (n.outputs[0].dtype != DType::u8 || n.outputs[1].dtype != DType::f32 || n.outputs[2].dtype != DType::u8)
      return "outputs must be u8, f32, u8";
  }
  return "";
}

std::unique_ptr<Kernel> make_dynamic_quantize(NodeDesc& n) {
  const std::string why = check_dynamic_quantize(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<DynamicQuantizeKernel>();
}

OPFORGE_KERNEL(DynamicQuantize, make_dynamic_quantize, check_dynamic_quantize);

}  // namespace opforge_cpu
