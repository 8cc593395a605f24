// AdaptiveAvgPool-8: average pooling of 1-D/2-D/3-D data (N, C, spatial...) to the output size
// of a constant second input; output bin i of an axis of size L pooled to O covers the inputs
// [floor(i * L / O), ceil((i + 1) * L / O)).
#include <vector>

#include "kernels/adaptive_pool_common.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
using adaptive_pool::bin_end;
using adaptive_pool::bin_start;
using adaptive_pool::spatial3;

template <class T> class AdaptiveAvgPoolKernel : public Kernel {
 public:
  explicit AdaptiveAvgPoolKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    planes_ = xs.at(0) * xs.at(1);
    spatial3(xs, in_);
    spatial3(n.outputs.at(0).shape, out_);
  }
  std::string impl_name() const override { return "adaptive_avg_pool"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t isz = in_[0] * in_[1] * in_[2], osz = out_[0] * out_[1] * out_[2];
    parallel_range(planes_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = x + p * isz;
        T* yp = y + p * osz;
        for (int64_t od = 0; od < out_[0]; ++od) {
          const int64_t d0 = bin_start(od, in_[0], out_[0]), d1 = bin_end(od, in_[0], out_[0]);
          for (int64_t oh = 0; oh < out_[1]; ++oh) {
            const int64_t h0 = bin_start(oh, in_[1], out_[1]), h1 = bin_end(oh, in_[1], out_[1]);
            for (int64_t ow = 0; ow < out_[2]; ++ow) {
              const int64_t w0 = bin_start(ow, in_[2], out_[2]), w1 = bin_end(ow, in_[2], out_[2]);
              double acc = 0;
              for (int64_t d = d0; d < d1; ++d)
                for (int64_t h = h0; h < h1; ++h) {
                  const T* row = xp + (d * in_[1] + h) * in_[2];
                  for (int64_t w = w0; w < w1; ++w) acc += static_cast<double>(row[w]);
                }
              const double count = static_cast<double>((d1 - d0) * (h1 - h0) * (w1 - w0));
              yp[(od * out_[1] + oh) * out_[2] + ow] = static_cast<T>(acc / count);
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

std::unique_ptr<Kernel> make_adaptive_avg_pool(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<AdaptiveAvgPoolKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_adaptive_avg_pool(const NodeDesc& n) {
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "AdaptiveAvgPool needs data of rank 3 to 5";
  if (!n.is_const(1)) return "AdaptiveAvgPool needs a constant output shape on the CPU device";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(AdaptiveAvgPool, make_adaptive_avg_pool, check_adaptive_avg_pool);

}  // namespace opforge_cpu
