// QuantizedMaxPool (opforge_cpu/ops/quantized_max_pool.py): oneDNN max pooling of a u8/s8
// tensor, read in whatever layout its producer wrote (a quantized convolution's nhwc) and
// written in the layout oneDNN picks for it.
#include "core/nn.hpp"

namespace opforge_cpu {

namespace {
class QuantizedMaxPoolKernel : public DnnlKernel {
 public:
  explicit QuantizedMaxPoolKernel(NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ys = n.outputs[0].shape;
    const int sp = static_cast<int>(xs.size()) - 2;
    auto kernel = n.attrs.ints("kernel");
    auto strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    auto dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    if (static_cast<int>(kernel.size()) != sp || static_cast<int>(strides.size()) != sp || static_cast<int>(dil.size()) != sp)
      throw CompileFailure("kernel, strides and dilations need one value per spatial axis");
    std::vector<int64_t> pb, pe;
    window_pads(n, xs, ys, kernel, strides, dil, pb, pe);
    dnnl::memory::dims ddil;
    for (auto d : dil) ddil.push_back(d - 1);
    auto src = md_of(n.in(0));
    auto dst = dnnl::memory::desc(to_dims(ys), dnnl_type(n.outputs[0].dtype), dnnl::memory::format_tag::any);
    dnnl::pooling_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::pooling_max, src, dst, to_dims(strides), to_dims(kernel),
                                             ddil, to_dims(pb), to_dims(pe), default_attr());
    set_primitive(dnnl::pooling_forward(pd), pd);
    arg_input(DNNL_ARG_SRC, 0, src);
    arg_output(DNNL_ARG_DST, 0, pd.dst_desc());
    n.outputs[0].md = pd.dst_desc();
    n.outputs[0].blocked = pd.dst_desc() != plain_md(n.outputs[0].dtype, ys);
  }
};
}  // namespace

std::string check_quantized_max_pool(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t != DType::u8 && t != DType::i8) return std::string("input is ") + dtype_name(t) + ", expected u8 or i8";
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "pooling of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  return "";
}

std::unique_ptr<Kernel> make_quantized_max_pool(NodeDesc& n) {
  std::string why = check_quantized_max_pool(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedMaxPoolKernel>(n);
}

OPFORGE_KERNEL(QuantizedMaxPool, make_quantized_max_pool, check_quantized_max_pool).layout_flexible();

}  // namespace opforge_cpu
