// QuantizedConvolutionBackpropData (opforge_cpu/ops/quantized_convolution_backprop_data.py): one
// oneDNN int8 deconvolution, u8/s8 source with a zero point, s8 weights [C_in, C_out, k...] with
// per-output-channel scales (packed once), f32 bias, fused relu/clip and a u8/s8 (requantized) or
// f32 destination: a UNet decoder's ConvTranspose between quantized convolutions, with no
// Dequantize before it nor Quantize after it.
#include "core/nn.hpp"
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

namespace {
// The deconvolution's geometry (oneDNN's form: dilations minus one), the paddings resolved from
// the known output size as the f32 kernel (core/nn.cpp make_dnnl_deconv) does:
// out = (in - 1) * stride + (k - 1) * dilation + 1 - pads_begin - pads_end.
ConvGeometry deconv_geometry(const NodeDesc& n) {
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const int sp = static_cast<int>(xs.size()) - 2;
  auto strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
  const std::string ap = n.attrs.s("auto_pad", "explicit");
  auto pb = n.attrs.ints("pads_begin", std::vector<int64_t>(sp, 0));
  pb.resize(sp, 0);
  std::vector<int64_t> pe(sp, 0);
  for (int i = 0; i < sp; ++i) {
    const int64_t ext = (ws[2 + i] - 1) * dil[i] + 1;
    const int64_t total = (xs[2 + i] - 1) * strides[i] + ext - ys[2 + i];
    if (ap == "same_upper" || ap == "same_lower") pb[i] = ap == "same_upper" ? total / 2 : total - total / 2;
    else if (ap == "valid") pb[i] = 0;
    pe[i] = total - pb[i];
  }
  ConvGeometry g{to_dims(strides), {}, to_dims(pb), to_dims(pe)};
  for (auto d : dil) g.dilations.push_back(d - 1);
  return g;
}
}  // namespace

std::string check_quantized_convolution_backprop_data(const NodeDesc& n) {
  std::string why = check_quantized(n);
  if (!why.empty()) return why;
  if (n.attrs.i("sum_input", -1) >= 0) return "a residual operand is not supported";
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "transposed convolution of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  if (n.in(1).shape.size() != r) return "weights must have the data's rank ([C_in, C_out, k...])";
  if (n.in(1).shape[0] != n.in(0).shape[1]) return "weights' C_in differs from the data's channels";
  const size_t sp = r - 2;
  for (const char* k : {"strides", "dilations"}) {
    auto v = n.attrs.ints(k, std::vector<int64_t>(sp, 1));
    if (v.size() != sp) return std::string(k) + " needs one value per spatial axis";
    for (auto x : v) if (x < 1) return std::string(k) + " must be positive";
  }
  return "";
}

std::unique_ptr<Kernel> make_quantized_convolution_backprop_data(NodeDesc& n) {
  std::string why = check_quantized_convolution_backprop_data(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const ConvGeometry geo = deconv_geometry(n);
  const int64_t channels = ys[1];
  QuantParams q = quant_params(n, channels);
  dnnl::primitive_attr attr = quant_attr(q, 1);  // per output channel: dimension 0 of oneDNN's weights
  // the weights are [C_in, C_out, k...]; oneDNN's deconvolution weights are [C_out, C_in, k...]:
  // the same bytes described with the first two strides swapped
  dnnl::memory::dims wdims = to_dims(ws);
  std::swap(wdims[0], wdims[1]);
  Shape wstrides = strides_of(ws);
  std::swap(wstrides[0], wstrides[1]);
  auto w_user = dnnl::memory::desc(wdims, dnnl::memory::data_type::s8, dnnl::memory::dims(wstrides.begin(), wstrides.end()));
  auto w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
  auto bias_md = dnnl::memory::desc({channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto user_src = md_of(n.in(0));
  auto mk = [&](const dnnl::memory::desc& s) {
    const auto fwd = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::deconvolution_direct;
    auto d = any_md(q.out, ys);
    if (q.has_bias)
      return dnnl::deconvolution_forward::primitive_desc(cpu_engine(), fwd, alg, s, w_any, bias_md, d, geo.strides,
                                                         geo.dilations, geo.pads_begin, geo.pads_end, attr);
    return dnnl::deconvolution_forward::primitive_desc(cpu_engine(), fwd, alg, s, w_any, d, geo.strides, geo.dilations,
                                                       geo.pads_begin, geo.pads_end, attr);
  };
  dnnl::deconvolution_forward::primitive_desc pd;
  try {
    // the source layout the fastest implementation wants (nhwc for int8); a tensor in another
    // layout is reordered into scratch by the kernel
    pd = mk(any_md(n.in(0).dtype, xs));
  } catch (const dnnl::error&) {
    pd = mk(user_src);
  }
  auto k = std::make_unique<QuantizedKernel>();
  k->finish(dnnl::deconvolution_forward(pd), pd, user_src, n.inputs[1].const_data, w_user, bias_md, q);
  n.outputs[0].md = pd.dst_desc();
  n.outputs[0].blocked = pd.dst_desc() != plain_md(q.out, ys);
  return k;
}

// (on one line: test_cpu_kernel_registry.py reads the registrations from the sources)
OPFORGE_KERNEL(QuantizedConvolutionBackpropData, make_quantized_convolution_backprop_data, check_quantized_convolution_backprop_data).layout_flexible();

}  // namespace opforge_cpu
