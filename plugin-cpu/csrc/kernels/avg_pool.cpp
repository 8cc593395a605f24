// AvgPool: one oneDNN primitive (see core/nn.cpp make_dnnl_pool), except a bf16 nhwc input on an
// AVX512_BF16 host (a bf16 program's Inception pooling branch, read by a bf16 convolution: emit.py
// _bf16_passes), which a channels-last loop pools: 32 channels a vector, each tap widened to its
// exact f32 value, summed in f32, scaled once and rounded to bf16 (vcvtne2ps2bf16).
#include "core/dnnl_util.hpp"
#include "core/elementwise.hpp"
#include "core/host_isa.hpp"
#include "core/nn.hpp"
#include "kernels/nhwc_windows.hpp"

#include <immintrin.h>

namespace opforge_cpu {

namespace {
// y[0:c] = (sum over the k taps) * scale, bf16 in and out.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
void window_mean_nhwc_bf16(const uint16_t* const* taps, int64_t k, float scale, uint16_t* y, int64_t c) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < c; i += 32) {
    const __mmask32 lanes = c - i >= 32 ? static_cast<__mmask32>(0xffffffffu)
                                        : static_cast<__mmask32>((1ull << (c - i)) - 1ull);
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    for (int64_t t = 0; t < k; ++t) {
      const __m512i h = _mm512_maskz_loadu_epi16(lanes, taps[t] + i);
      lo = _mm512_add_ps(lo, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16)));
      hi = _mm512_add_ps(hi, _mm512_castsi512_ps(
                                 _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16)));
    }
    const __m512bh out = _mm512_cvtne2ps_pbh(_mm512_mul_ps(hi, s), _mm512_mul_ps(lo, s));
    _mm512_mask_storeu_epi16(y + i, lanes, reinterpret_cast<__m512i>(out));
  }
}

class ChannelsLastAvgPoolBf16 : public Kernel {
 public:
  ChannelsLastAvgPoolBf16(const NodeDesc& n, const std::vector<int64_t>& pb, bool exclude)
      : xs_(n.in(0).shape), ys_(n.outputs[0].shape), exclude_(exclude) {
    w_.kernel = n.attrs.ints("kernel");
    w_.strides = n.attrs.ints("strides", std::vector<int64_t>(2, 1));
    w_.pads_begin = pb;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    auto* y = static_cast<uint16_t*>(out[0].data);
    const int64_t C = xs_[1], taps_max = w_.kernel[0] * w_.kernel[1];
    for_each_nhwc_window(ctx.num_threads, static_cast<const uint16_t*>(in[0].data), xs_, ys_, w_,
                         [&](const uint16_t** taps, int64_t k, int64_t o) {
      // (with the padding counted, every window lies inside the padded input: make_avg_pool)
      const float scale = 1.0f / static_cast<float>(exclude_ ? k : taps_max);
      window_mean_nhwc_bf16(taps, k, scale, y + o * C, C);
    });
  }
  std::string impl_name() const override { return "avg_nhwc_bf16:avx512"; }

 private:
  Shape xs_, ys_;
  Window2d w_;
  bool exclude_;
};

// The bf16 channels-last loop applies: a 2-D nhwc bf16 input, every window holding at least one
// input pixel (pads smaller than the kernel), and with the padding counted no window reaching
// past the explicit padding (ceil rounding: make_dnnl_pool's rule), on a host with AVX512_BF16.
bool channels_last_bf16(const NodeDesc& n, const std::vector<int64_t>& pb, const std::vector<int64_t>& pe,
                        bool exclude) {
  const TensorInfo& x = n.in(0);
  const auto kernel = n.attrs.ints("kernel");
  if (!x.blocked || x.shape.size() != 4 || kernel.size() != 2 ||
      x.md != dnnl::memory::desc(to_dims(x.shape), dnnl::memory::data_type::bf16, dnnl::memory::format_tag::acdb))
    return false;
  for (size_t i = 0; i < 2; ++i)
    if (pb[i] >= kernel[i] || pe[i] >= kernel[i] || pb[i] < 0 || pe[i] < 0) return false;
  if (!exclude) {
    const auto pe0 = n.attrs.ints("pads_end", std::vector<int64_t>(2, 0));
    const std::string ap = n.attrs.s("auto_pad", "explicit");
    for (size_t i = 0; i < 2; ++i)
      if ((ap == "explicit" || ap == "notset") && pe[i] > (pe0.size() > i ? pe0[i] : 0)) return false;
  }
  static const bool host = host_has_avx512_bf16();
  return host;
}
}  // namespace

std::unique_ptr<Kernel> make_avg_pool(NodeDesc& n) {
  if (n.in(0).shape.size() == 4 && n.attrs.ints("kernel").size() == 2) {
    const bool exclude = n.attrs.b("exclude-pad", n.attrs.b("exclude_pad", false));
    std::vector<int64_t> pb, pe;
    window_pads(n, n.in(0).shape, n.outputs[0].shape, n.attrs.ints("kernel"),
                n.attrs.ints("strides", std::vector<int64_t>(2, 1)), std::vector<int64_t>(2, 1), pb, pe);
    if (channels_last_bf16(n, pb, pe, exclude)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = n.in(0).md.get_dims() == to_dims(n.outputs[0].shape)
                            ? n.in(0).md
                            : dnnl::memory::desc(to_dims(n.outputs[0].shape), dnnl::memory::data_type::bf16,
                                                 dnnl::memory::format_tag::acdb);
      return std::make_unique<ChannelsLastAvgPoolBf16>(n, pb, exclude);
    }
  }
  return make_dnnl_pool(n, false);
}

OPFORGE_KERNEL(AvgPool, make_avg_pool, check_float).layout_flexible();

}  // namespace opforge_cpu
