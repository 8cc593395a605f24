// AdaptiveMaxPool-8: max pooling of 1-D/2-D/3-D data (N, C, spatial...) to the output size of a
// constant second input (bins as in AdaptiveAvgPool); the second output is the index of each
// maximum within its channel's flattened spatial plane (the first one in row-major order on
// ties; a NaN wins), of `index_element_type` (i32 or i64).
#include <cmath>
#include <vector>

#include "kernels/adaptive_pool_common.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
using adaptive_pool::bin_end;
using adaptive_pool::bin_start;
using adaptive_pool::spatial3;

template <class T> inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <class T, class I> class AdaptiveMaxPoolKernel : public Kernel {
 public:
  explicit AdaptiveMaxPoolKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    planes_ = xs.at(0) * xs.at(1);
    spatial3(xs, in_);
    spatial3(n.outputs.at(0).shape, out_);
  }
  std::string impl_name() const override { return "adaptive_max_pool"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    I* yi = out[1].ptr<I>();
    const int64_t isz = in_[0] * in_[1] * in_[2], osz = out_[0] * out_[1] * out_[2];
    if (isz == 0 && planes_ * osz > 0) throw KernelFailure("AdaptiveMaxPool of an empty spatial plane");
    parallel_range(planes_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * isz;
        for (int64_t od = 0; od < out_[0]; ++od) {
          const int64_t d0 = bin_start(od, in_[0], out_[0]), d1 = bin_end(od, in_[0], out_[0]);
          for (int64_t oh = 0; oh < out_[1]; ++oh) {
            const int64_t h0 = bin_start(oh, in_[1], out_[1]), h1 = bin_end(oh, in_[1], out_[1]);
            for (int64_t ow = 0; ow < out_[2]; ++ow) {
              const int64_t w0 = bin_start(ow, in_[2], out_[2]), w1 = bin_end(ow, in_[2], out_[2]);
              int64_t best = (d0 * in_[1] + h0) * in_[2] + w0;
              T bv = xp[best];
              for (int64_t d = d0; d < d1 && !is_nan_value(bv); ++d)
                for (int64_t h = h0; h < h1; ++h) {
                  const int64_t base = (d * in_[1] + h) * in_[2];
                  for (int64_t w = w0; w < w1; ++w) {
                    const T v = xp[base + w];
                    if (v > bv || (is_nan_value(v) && !is_nan_value(bv))) {
                      bv = v;
                      best = base + w;
                    }
                  }
                }
              const int64_t o = p * osz + (od * out_[1] + oh) * out_[2] + ow;
              y[o] = bv;
              yi[o] = static_cast<I>(best);
            }
          }
        }
      }
    }, 1);
  }

 private:
  int64_t planes_ = 1;
  int64_t in_[3] = {1, 1, 1}, out_[3] = {1, 1, 1};
};
}  // namespace

std::unique_ptr<Kernel> make_adaptive_max_pool(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  const bool i32 = n.outputs.at(1).dtype == DType::i32;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    if (i32) k = std::make_unique<AdaptiveMaxPoolKernel<T, int32_t>>(n);
    else k = std::make_unique<AdaptiveMaxPoolKernel<T, int64_t>>(n);
  });
  return k;
}

std::string check_adaptive_max_pool(const NodeDesc& n) {
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "AdaptiveMaxPool needs data of rank 3 to 5";
  if (!n.is_const(1)) return "AdaptiveMaxPool needs a constant output shape on the CPU device";
  if (n.outputs.size() < 2) return "AdaptiveMaxPool needs its two outputs";
  const DType it = n.outputs[1].dtype;
  if (it != DType::i32 && it != DType::i64) return std::string("index element type ") + dtype_name(it) + " is not supported";
  return check_unary(n, Types::Numeric);
}

OPFORGE_KERNEL(AdaptiveMaxPool, make_adaptive_max_pool, check_adaptive_max_pool);

}  // namespace opforge_cpu
