// Softmax / LogSoftmax through oneDNN's softmax primitive (accurate algorithm) for f32.
#pragma once

#include "core/dnnl_util.hpp"

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
  }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
};

}  // namespace opforge_cpu
