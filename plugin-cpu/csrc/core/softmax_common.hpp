// Softmax / LogSoftmax through oneDNN's softmax primitive (accurate algorithm) for f32.
#pragma once

#include <limits>

#include "core/dnnl_util.hpp"
#include "core/threading.hpp"

namespace opforge_cpu {

class SoftmaxKernel : public DnnlKernel {
 public:
  SoftmaxKernel(const NodeDesc& n, bool log) {
    if (n.in(0).dtype != DType::f32) throw CompileFailure("the CPU device runs softmax in f32 only");
    const Shape& s = n.in(0).shape;
    int64_t axis = normalize_axis(n.attrs.i("axis", 1), std::max<int64_t>(1, static_cast<int64_t>(s.size())));
    auto md = plain_md(DType::f32, s);
    dnnl::softmax_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference,
                                             log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate,
                                             md, md, static_cast<int>(axis), default_attr());
    set_primitive(dnnl::softmax_forward(pd), pd);
    arg_input(DNNL_ARG_SRC, 0, md);
    arg_output(DNNL_ARG_DST, 0, md);
    len_ = s.empty() ? 1 : s[axis];
    inner_ = 1;
    for (size_t d = axis + 1; d < s.size(); ++d) inner_ *= s[d];
    outer_ = len_ * inner_ ? numel(s) / (len_ * inner_) : 0;
  }
  // oneDNN skips a NaN when it takes the row's maximum ([NaN, 1, 2] -> [NaN, 0, 0]); in ONNX (and
  // IEEE arithmetic) a row with a NaN or a +inf (inf - inf) is NaN throughout. Out of place, so
  // the input is still there to look at.
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    DnnlKernel::run(ctx, in, out, bound);
    ctx.stream->wait();
    const float* x = in[0].ptr<float>();
    float* y = out[0].ptr<float>();
    const int64_t rows = outer_ * inner_, len = len_, inner = inner_;
    parallel_blocks(rows, rows * len > 65536 ? ctx.num_threads : 1, [&](int64_t r0, int64_t r1) {
     for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = (r / inner) * len * inner + r % inner;
      // (a full |-reduction, no early exit: it vectorises, 7x faster than stopping at the first
      // NaN). NaN or +inf is exactly "not below +inf": one compare per element. The last axis
      // (inner == 1, attention's scores) gets a unit-stride loop: with the strided one the
      // compiler packs scalar loads, and the check cost 2.5x the oneDNN softmax itself on BERT's
      // 4x128x128 scores (0.115 vs 0.045 ms).
      int poisoned = 0;
      if (inner == 1) {
        // v - v is NaN exactly for NaN and +-inf: a plain vector subtract-and-add screens the row,
        // and only a row it flags (one holding -inf, as some attention masks do, is fine) gets
        // the exact test
        const float* row = x + base;
        float screen = 0.0f;
#pragma omp simd reduction(+ : screen)
        for (int64_t k = 0; k < len; ++k) screen += row[k] - row[k];
        if (screen != screen)
          for (int64_t k = 0; k < len; ++k) poisoned |= !(row[k] < std::numeric_limits<float>::infinity());
      } else {
#pragma omp simd reduction(| : poisoned)
        for (int64_t k = 0; k < len; ++k)
          poisoned |= !(x[base + k * inner] < std::numeric_limits<float>::infinity());
      }
      if (poisoned)
        for (int64_t k = 0; k < len; ++k) y[base + k * inner] = std::numeric_limits<float>::quiet_NaN();
     }
    });
  }
  int inplace_input(int) const override { return -1; }

 private:
  int64_t len_ = 1, inner_ = 1, outer_ = 0;
};

}  // namespace opforge_cpu
