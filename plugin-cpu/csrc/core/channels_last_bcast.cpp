// oneDNN 3.2's JIT binary (jit:uni) runs a per-channel broadcast over an nhwc tensor one pixel
// at a time, so its cost follows the pixel count, not the bytes: with few channels a pixel it is
// several times slower per element than with many. EfficientNet's first squeeze-excitation scale
// (32x112x112) took 226 us at one thread where its 144x56x56 one took 74 us for more elements
// (0.56 vs 0.16 ns an element); MobileNetV3-small's 16x56x56 took 35 us, 6x its 240x14x14 rate.
// This loop keeps the channel vectors in registers across pixels (up to 64 channels, 4 zmm) and
// streams the pixels, so it runs at the memory rate whatever C is. Same IEEE products/sums as
// oneDNN's binary (one rounding a element, NaN/inf propagate): the results are bit-identical.
#include "core/channels_last_bcast.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/dnnl_util.hpp"
#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

template <bool Mul> __attribute__((target("avx512f"))) inline __m512 apply(__m512 x, __m512 s) {
  return Mul ? _mm512_mul_ps(x, s) : _mm512_add_ps(x, s);
}

// Pixels [p0, p1) of one batch: x and y point at the batch's first pixel, C channels a pixel.
// Channels in registers for C <= 64 (the squeeze-excitation scales where the per-pixel overhead
// dominates); a plain channel loop beyond, where a pixel is long enough on its own.
template <bool Mul>
__attribute__((target("avx512f"))) void scale_pixels(const float* x, const float* s, float* y, int64_t C, int64_t p0,
                                                      int64_t p1) {
  if (C <= 64) {
    __m512 sv[4];
    __mmask16 m[4];
    const int nv = static_cast<int>((C + 15) / 16);
    for (int v = 0; v < nv; ++v) {
      const int64_t left = C - 16 * v;
      m[v] = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
      sv[v] = _mm512_maskz_loadu_ps(m[v], s + 16 * v);
    }
    if (C % 16 == 0) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * C;
        float* yp = y + p * C;
        for (int v = 0; v < nv; ++v) _mm512_storeu_ps(yp + 16 * v, apply<Mul>(_mm512_loadu_ps(xp + 16 * v), sv[v]));
      }
    } else {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * C;
        float* yp = y + p * C;
        for (int v = 0; v < nv; ++v)
          _mm512_mask_storeu_ps(yp + 16 * v, m[v], apply<Mul>(_mm512_maskz_loadu_ps(m[v], xp + 16 * v), sv[v]));
      }
    }
    return;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const float* xp = x + p * C;
    float* yp = y + p * C;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) _mm512_storeu_ps(yp + c, apply<Mul>(_mm512_loadu_ps(xp + c), _mm512_loadu_ps(s + c)));
    if (c < C) {
      const __mmask16 m = static_cast<__mmask16>((1u << (C - c)) - 1u);
      _mm512_mask_storeu_ps(yp + c, m, apply<Mul>(_mm512_maskz_loadu_ps(m, xp + c), _mm512_maskz_loadu_ps(m, s + c)));
    }
  }
}

class ChannelsLastBcast : public Kernel {
 public:
  ChannelsLastBcast(bool mul, int full, int other, int64_t n, int64_t c, int64_t pixels, bool s_per_batch)
      : mul_(mul), full_(full), other_(other), n_(n), c_(c), pixels_(pixels), s_per_batch_(s_per_batch) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float* x = in[full_].ptr<float>();
    const float* s = in[other_].ptr<float>();
    float* y = out[0].ptr<float>();
    const int64_t per = pixels_ * c_;
    for (int64_t b = 0; b < n_; ++b) {
      const float* sb = s + (s_per_batch_ ? b * c_ : 0);
      // A second thread only for >= 32k elements (128 KB) each: this loop does that many in
      // ~10 us, about what waking the second thread costs on a busy 2-core host (a fork + join
      // measured 23 us there), so MobileNetV3's 16x56x56 scale stays on one.
      parallel_range(pixels_, ctx.num_threads, [&](int64_t p0, int64_t p1) {
        if (mul_) scale_pixels<true>(x + b * per, sb, y + b * per, c_, p0, p1);
        else scale_pixels<false>(x + b * per, sb, y + b * per, c_, p0, p1);
      }, std::max<int64_t>(1, 32768 / c_));
    }
  }
  int inplace_input(int o) const override { return o == 0 ? full_ : -1; }
  std::string impl_name() const override { return mul_ ? "mul_channels_last:avx512" : "add_channels_last:avx512"; }

 private:
  bool mul_;
  int full_, other_;
  int64_t n_, c_, pixels_;
  bool s_per_batch_;
};

bool avx512_host() { return host_has_avx512(); }

// channels-last tag of a rank (nwc, nhwc, ndhwc)
dnnl::memory::format_tag channels_last(size_t rank) {
  using tag = dnnl::memory::format_tag;
  return rank == 3 ? tag::acb : rank == 4 ? tag::acdb : rank == 5 ? tag::acdeb : tag::undef;
}

}  // namespace

std::unique_ptr<Kernel> make_channels_last_bcast(dnnl::algorithm alg, int full, int other, const Shape& out,
                                                 const dnnl::memory::desc& x_md, const dnnl::memory::desc& s_md,
                                                 const dnnl::memory::desc& dst_md) {
  using dt = dnnl::memory::data_type;
  // OPFORGE_CPU_CL_BCAST=0: oneDNN's binary instead, for same-build A/B measurements
  static const bool enabled = env_switch_on("OPFORGE_CPU_CL_BCAST");
  if (!enabled) return nullptr;
  if (alg != dnnl::algorithm::binary_mul && alg != dnnl::algorithm::binary_add) return nullptr;
  if (out.size() < 3 || out.size() > 5 || !avx512_host()) return nullptr;
  const auto tag = channels_last(out.size());
  const dnnl::memory::desc cl(to_dims(out), dt::f32, tag);
  if (x_md != cl || dst_md != cl) return nullptr;
  // s: [1 or N, C, 1, ...] f32, whose C values a batch are contiguous: dense plain or
  // channels-last (the same bytes when every spatial dim is 1)
  const auto sd = s_md.get_dims();
  if (sd.size() != out.size() || s_md.get_data_type() != dt::f32 || sd[1] != out[1]) return nullptr;
  if (sd[0] != 1 && sd[0] != out[0]) return nullptr;
  for (size_t i = 2; i < sd.size(); ++i)
    if (sd[i] != 1) return nullptr;
  const Shape s_shape(sd.begin(), sd.end());
  if (s_md != plain_md(DType::f32, s_shape) && s_md != dnnl::memory::desc(sd, dt::f32, tag))
    return nullptr;
  int64_t pixels = 1;
  for (size_t i = 2; i < out.size(); ++i) pixels *= out[i];
  if (out[1] <= 0 || pixels <= 0) return nullptr;
  return std::make_unique<ChannelsLastBcast>(alg == dnnl::algorithm::binary_mul, full, other, out[0], out[1], pixels,
                                             sd[0] != 1);
}

}  // namespace opforge_cpu
