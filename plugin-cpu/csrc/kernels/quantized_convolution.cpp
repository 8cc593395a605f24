// QuantizedConvolution (opforge_cpu/ops/quantized_convolution.py): one oneDNN int8 convolution,
// u8/s8 source with a zero point, s8 weights with per-output-channel scales (packed once), f32
// bias, fused relu/clip, and a u8/s8 (requantized) or f32 destination. oneDNN picks the kernel
// for the host: AMX, AVX-512 VNNI, AVX2 VNNI or plain AVX2 u8s8.
#include "core/nn.hpp"
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

std::string check_quantized_convolution(const NodeDesc& n) {
  std::string why = check_quantized(n);
  if (!why.empty()) return why;
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "convolution of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  if (n.in(1).shape.size() != r && n.in(1).shape.size() != r + 1) return "weights must have the data's rank (or one more: grouped)";
  return "";
}

std::unique_ptr<Kernel> make_quantized_convolution(NodeDesc& n) {
  std::string why = check_quantized_convolution(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const bool grouped = ws.size() == xs.size() + 1;
  const ConvGeometry geo = conv_geometry(n);
  const int64_t channels = ys[1];
  QuantParams q = quant_params(n, channels);
  // per output channel: dimension 0 of [C_out, C_in, k...], dimensions 0 and 1 of [G, C_out/G, ...]
  const int wei_mask = grouped ? 3 : 1;
  dnnl::primitive_attr attr = quant_attr(q, wei_mask);

  auto wdims = to_dims(ws);
  auto w_plain = plain_md(DType::i8, ws);
  auto w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
  auto bias_md = dnnl::memory::desc({channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto user_src = md_of(n.in(0));
  // with a residual operand the output is written over it, so it takes that tensor's layout
  auto mk = [&](const dnnl::memory::desc& s) {
    auto d = q.sum_input >= 0 ? md_of(n.in(q.sum_input)) : any_md(q.out, ys);
    return conv_primitive(geo, s, w_any, q.has_bias ? bias_md : dnnl::memory::desc(), d, attr);
  };
  auto is_ref = [](const dnnl::convolution_forward::primitive_desc& p) {
    const char* impl = p.impl_info_str();
    return impl == nullptr || std::string(impl).rfind("ref", 0) == 0;
  };
  bool sum_copy = false;
  auto select = [&]() {
    dnnl::convolution_forward::primitive_desc pd;
    sum_copy = false;
    try {
      // the source layout the fastest implementation wants (nhwc for int8); a tensor in another
      // layout is reordered into scratch by the kernel
      pd = mk(any_md(n.in(0).dtype, xs));
    } catch (const dnnl::error&) {
      pd = mk(user_src);
    }
    // A residual operand in a layout only oneDNN's reference convolution writes (a plain nchw
    // tensor from a Quantize) is copied into the output buffer in the layout the fast one wants,
    // by the kernel, instead of fixing the output's layout to it.
    if (q.sum_input >= 0 && is_ref(pd)) {
      const int keep = q.sum_input;
      q.sum_input = -1;  // build the descriptor with an "any" destination
      auto any_pd = mk(any_md(n.in(0).dtype, xs));
      q.sum_input = keep;
      if (!is_ref(any_pd)) {
        pd = any_pd;
        sum_copy = true;
      }
    }
    return pd;
  };
  dnnl::convolution_forward::primitive_desc pd = select();
  // The clamp before the sum (eltwise, then sum) is an order some oneDNN kernels may not take:
  // rather than a reference convolution, run without it (the result then goes unsaturated into
  // the sum, as before the clamp existed)
  if (!q.sum_clamp.empty() && is_ref(pd)) {
    q.sum_clamp.clear();
    attr = quant_attr(q, wei_mask);
    pd = select();
  }
  auto k = std::make_unique<QuantizedKernel>();
  k->finish(dnnl::convolution_forward(pd), pd, user_src, n.inputs[1].const_data, w_plain, bias_md, q);
  if (sum_copy) k->copy_sum_operand(md_of(n.in(q.sum_input)));
  n.outputs[0].md = pd.dst_desc();
  n.outputs[0].blocked = pd.dst_desc() != plain_md(q.out, ys);
  return k;
}

OPFORGE_KERNEL(QuantizedConvolution, make_quantized_convolution, check_quantized_convolution).layout_flexible();

}  // namespace opforge_cpu
