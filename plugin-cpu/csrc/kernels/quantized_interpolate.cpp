// QuantizedInterpolate (opforge_cpu/ops/quantized_interpolate.py): Interpolate-11 of a u8/s8
// image over H and W, read through its dequantization and written on the output's grid: a UNet
// decoder's bilinear upsampling between quantized convolutions, with no f32 tensor in between.
// The weights are Interpolate's own (interpolate_taps.hpp); the arithmetic is the QDQ graph's in
// f32, in the order the f32 kernel resamples (columns, then rows):
//   v = (q - z) * s,  t[iy][ox] = sum_kx wx * v[iy][ix],  y = sum_ky wy * t[iy],
//   q_out = saturate(rint(y / s_out) + z_out)
// over the channels-last input (a quantized convolution's output, read in place; another layout
// is reordered into scratch first), so every loop runs along the contiguous channels. A source
// row's column pass is kept while the next output rows read it (2x upsampling reads each twice),
// and a two-tap row (linear upsampling) is combined, quantized and stored in one pass.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")  // see quantized_eltwise.cpp: the clamps vectorise
// the weighted sums as products and additions, as the f32 reference rounds them: the AVX-512
// build (with FMA, for the quotient) would otherwise contract them, and an ulp decides ties
#pragma GCC optimize("fp-contract=off")
#endif
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "kernels/int8_layout.hpp"
#include "kernels/interpolate_taps.hpp"

// the AVX-512 build of the loops, with FMA (the quotient's correction step)
#if defined(__x86_64__) && defined(__GNUC__)
#define OPFORGE_INTERP_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define OPFORGE_INTERP_AVX2 __attribute__((target("avx2,fma")))
#else
#define OPFORGE_INTERP_AVX512
#define OPFORGE_INTERP_AVX2
#endif

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }


class QuantizedInterpolateKernel : public StagedKernel {
 public:
  QuantizedInterpolateKernel(NodeDesc& n, ResampleTaps<float> rows, ResampleTaps<float> cols)
      : rows_(std::move(rows)), cols_(std::move(cols)) {
    const Shape& xs = n.in(0).shape;
    N_ = xs[0];
    C_ = xs[1];
    H_ = xs[2];
    W_ = xs[3];
    OH_ = rows_.n_out;
    OW_ = cols_.n_out;
    for (int64_t o = 0; o < OH_; ++o) max_row_taps_ = std::max(max_row_taps_, rows_.start[o + 1] - rows_.start[o]);
    in_ = n.in(0).dtype;
    out_ = n.outputs[0].dtype;
    s_ = static_cast<float>(n.attrs.f("src_scale"));
    z_ = static_cast<float>(n.attrs.i("src_zero_point", 0));
    so_ = static_cast<float>(n.attrs.f("dst_scale"));
    zo_ = static_cast<float>(n.attrs.i("dst_zero_point", 0));
    channels_last_out_ = channels_last_io(n);
  }
  std::string impl_name() const override {
    return staged_name("resample") + (int8_avx512() ? ":avx512" : avx2() ? ":avx2" : "");
  }

 private:
  void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const override {
    with_int8_input(in_, data[0], [&](auto* x) {
      with_int8_output(out_, out[0].data, [&](auto* y, float lo, float hi) { resample(ctx, x, y, lo, hi); });
    });
  }
  template <class I, class O> void resample(RunContext& ctx, const I* x, O* y, float lo, float hi) const {
    const bool wide = int8_avx512(), mid = !wide && avx2();
    parallel_range(N_ * OH_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      if (wide) rows_avx512<I, O>(x, y, lo, hi, r0, r1);
      else if (mid) rows_avx2<I, O>(x, y, lo, hi, r0, r1);
      else rows<I, O, false>(x, y, lo, hi, r0, r1);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW_ * C_)));
  }
  template <class I, class O>
  OPFORGE_INTERP_AVX512 void rows_avx512(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    rows<I, O, true>(x, y, lo, hi, r0, r1);
  }
  // An AVX2 host (no AVX-512; ONEDNN_MAX_CPU_ISA=AVX2 emulates one): the same loops 8 lanes wide
  // with the FMA quotient, the same bytes as the division (stop 17: unet_small's upsampling ran
  // the SSE2 baseline at 11.5 ms against OpenVINO's 4.3). OPFORGE_CPU_INT8_AVX2=0: the baseline.
  static bool avx2() {
    static const bool on = host_has_avx2_fma() && env_switch_on("OPFORGE_CPU_INT8_AVX2");
    return on;
  }
  template <class I, class O>
  OPFORGE_INTERP_AVX2 void rows_avx2(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    rows<I, O, true>(x, y, lo, hi, r0, r1);
  }
  // Source row iy of image n, dequantized and resampled along W: t[ox * C + c].
  template <class I>
  OPFORGE_INT8_INLINE void column_pass(const I* x, int64_t n, int64_t iy, float* t) const {
    const int64_t C = C_, W = W_, OW = OW_;
    const float s = s_, z = z_;
    const I* row = x + (n * H_ + iy) * W * C;
    const int64_t* start = cols_.start.data();
    const int64_t* idx = cols_.idx.data();
    const float* w = cols_.w.data();
    for (int64_t ox = 0; ox < OW; ++ox) {
      float* dst = t + ox * C;
      for (int64_t k = start[ox]; k < start[ox + 1]; ++k) {
        const I* src = row + idx[k] * C;
        const float wx = w[k];
        if (k == start[ox]) {
          for (int64_t c = 0; c < C; ++c) dst[c] = wx * ((static_cast<float>(src[c]) - z) * s);
        } else {
          for (int64_t c = 0; c < C; ++c) dst[c] += wx * ((static_cast<float>(src[c]) - z) * s);
        }
      }
      if (start[ox] == start[ox + 1]) for (int64_t c = 0; c < C; ++c) dst[c] = 0.f;
    }
  }
  // Output rows [r0, r1) of N * OH. (Everything the loops read is a local: a store through a
  // byte pointer may alias any object the compiler can see, and the loops would not vectorise.)
  template <class I, class O, bool kFma>
  OPFORGE_INT8_INLINE void rows(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    const int64_t C = C_, OH = OH_, OW = OW_, len = OW * C;
    const int64_t sc = channels_last_out_ ? 1 : OH * OW, sp = channels_last_out_ ? C : 1, sn = C * OH * OW;
    // column passes of source rows, tagged (image, row); one more slot than a row reads, so the
    // rows the previous output row read stay while the next one fills a slot
    const int64_t slots = max_row_taps_ + 1;
    std::vector<float> buf(static_cast<size_t>(slots * len + len));
    std::vector<int64_t> tag(static_cast<size_t>(slots), -1);
    std::vector<int64_t> last_use(static_cast<size_t>(slots), -1);
    float* acc = buf.data() + slots * len;
    const int64_t* start = rows_.start.data();
    const int64_t* idx = rows_.idx.data();
    const float* w = rows_.w.data();
    std::vector<const float*> src(static_cast<size_t>(max_row_taps_));
    const float so = so_, inv_so = 1.f / so_, zo = zo_;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oy = r % OH;
      const int64_t taps = start[oy + 1] - start[oy];
      for (int64_t k = start[oy]; k < start[oy + 1]; ++k) {
        const int64_t want = n * H_ + idx[k];
        int64_t slot = -1;
        for (int64_t j = 0; j < slots; ++j) if (tag[j] == want) slot = j;
        if (slot < 0) {  // the slot used longest ago (never one this output row read already)
          slot = 0;
          for (int64_t j = 1; j < slots; ++j) if (last_use[j] < last_use[slot]) slot = j;
          column_pass<I>(x, n, idx[k], buf.data() + slot * len);
          tag[slot] = want;
        }
        last_use[slot] = r * slots + (k - start[oy]);
        src[k - start[oy]] = buf.data() + slot * len;
      }
      O* dst = y + n * sn + oy * OW * sp;
      const float* wy = w + start[oy];
      if (taps == 2 && sc == 1) {  // bilinear / linear upsampling into channels-last: one pass
        const float* t0 = src[0];
        const float* t1 = src[1];
        const float w0 = wy[0], w1 = wy[1];
        for (int64_t i = 0; i < len; ++i) dst[i] = quantize<O, kFma>(w0 * t0[i] + w1 * t1[i], so, inv_so, zo, lo, hi);
        continue;
      }
      for (int64_t i = 0; i < len; ++i) acc[i] = 0.f;
      for (int64_t k = 0; k < taps; ++k) {
        const float* t = src[k];
        const float wk = wy[k];
        if (k == 0) {
          for (int64_t i = 0; i < len; ++i) acc[i] = wk * t[i];
        } else {
          for (int64_t i = 0; i < len; ++i) acc[i] += wk * t[i];
        }
      }
      if (sc == 1) {
        for (int64_t i = 0; i < len; ++i) dst[i] = quantize<O, kFma>(acc[i], so, inv_so, zo, lo, hi);
      } else {
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t c = 0; c < C; ++c) dst[ox + c * sc] = quantize<O, kFma>(acc[ox * C + c], so, inv_so, zo, lo, hi);
      }
    }
  }
  // saturate(rint(y / s_out) + z_out). The quotient must be the division's, rounded as it is:
  // upsampling weights (1/4, 3/4) put many values exactly on .5 ties in units of a shared grid,
  // where an ulp decides the rounding (y * (1 / s_out) alone missed ONNX Runtime on 2.6% of a
  // bilinear resize). With FMA, the product and one correction step (the residual
  // y - q * s_out is exact in an FMA) give the correctly rounded quotient at a third of a
  // vdivps's cost, which was a third of the kernel's time; the baseline build divides.
  template <class O, bool kFma>
  static OPFORGE_INT8_INLINE O quantize(float y, float so, float inv_so, float zo, float lo, float hi) {
    float v;
    if constexpr (kFma) {
      const float q = y * inv_so;
      v = __builtin_fmaf(__builtin_fmaf(-q, so, y), inv_so, q);
    } else {
      v = y / so;
    }
    const float big = 4194304.f, magic = 12582912.f;
    v = v > -big ? v : -big;
    v = v < big ? v : big;
    v = ((v + magic) - magic) + zo;  // half to even, as rint in the default mode
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return static_cast<O>(static_cast<int32_t>(v));
  }

  ResampleTaps<float> rows_, cols_;
  int64_t N_ = 0, C_ = 0, H_ = 0, W_ = 0, OH_ = 0, OW_ = 0, max_row_taps_ = 1;
  bool channels_last_out_ = false;
  DType in_ = DType::u8, out_ = DType::u8;
  float s_ = 1.f, z_ = 0.f, so_ = 1.f, zo_ = 0.f;
};

// Why the node cannot run here ("" when it can); the taps when it can.
std::string plan(const NodeDesc& n, ResampleTaps<float> (&taps)[2]) {
  if (!is_int8(n.in(0).dtype)) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (n.outputs.empty() || !is_int8(n.outputs[0].dtype)) return "output must be u8 or i8";
  if (n.in(0).shape.size() != 4 || n.outputs[0].shape.size() != 4) return "only images (rank 4) are supported";
  if (!n.is_const(1) || (n.inputs.size() > 2 && !n.is_const(2))) return "sizes/scales and axes must be constants";
  const std::string mode = n.attrs.s("mode");
  if (mode != "nearest" && mode != "linear" && mode != "linear_onnx" && mode != "cubic")
    return "mode '" + mode + "' is not supported";
  for (const char* k : {"src_scale", "dst_scale"}) {
    const double s = n.attrs.f(k, 0.0);
    if (!(s > 0) || !std::isfinite(s)) return std::string(k) + " must be positive and finite";
  }
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  int64_t planes = 0;
  try {
    if (!interpolate_plane_taps(n, taps, planes)) return "only H and W may be resized, without padding";
  } catch (const CompileFailure& e) {
    return e.what();
  }
  if (xs[0] != ys[0] || xs[1] != ys[1] || planes != xs[0] * xs[1] || taps[0].n_in != xs[2] || taps[1].n_in != xs[3] ||
      taps[0].n_out != ys[2] || taps[1].n_out != ys[3])
    return "only H and W may be resized";
  return "";
}
}  // namespace

std::string check_quantized_interpolate(const NodeDesc& n) {
  ResampleTaps<float> taps[2];
  return plan(n, taps);
}

std::unique_ptr<Kernel> make_quantized_interpolate(NodeDesc& n) {
  ResampleTaps<float> taps[2];
  std::string why = plan(n, taps);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedInterpolateKernel>(n, std::move(taps[0]), std::move(taps[1]));
}

OPFORGE_KERNEL(QuantizedInterpolate, make_quantized_interpolate, check_quantized_interpolate).layout_flexible();

}  // namespace opforge_cpu
