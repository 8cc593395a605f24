// See quantized_common.hpp.
#include "kernels/quantized_common.hpp"

#include "core/primitive_log.hpp"

#include <cmath>

namespace opforge_cpu {

namespace {
dnnl::memory const_memory(dnnl::memory::data_type t, int64_t n, const void* data, size_t elem) {
  dnnl::memory m(dnnl::memory::desc({n}, t, dnnl::memory::format_tag::a), cpu_engine());
  std::memcpy(m.get_data_handle(), data, static_cast<size_t>(n) * elem);
  return m;
}

struct QuantBound : Bound {
  std::unordered_map<int, dnnl::memory> args, reorder_args, sum_args;
  char* padded = nullptr;  // the source buffer the primitive reads (prepad_source)
};

bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }
}  // namespace

std::string check_quantized(const NodeDesc& n) {
  const int sum = static_cast<int>(n.attrs.i("sum_input", -1));
  const size_t params = n.inputs.size() - (sum >= 0 ? 1 : 0);
  if (params < 3 || params > 4) return "needs data, weights, weight scales, an optional bias and an optional residual operand";
  if (sum >= 0 && static_cast<size_t>(sum) != params) return "sum_input must name the last input";
  if (!is_int8(n.in(0).dtype)) return std::string("data is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (n.in(1).dtype != DType::i8) return std::string("weights are ") + dtype_name(n.in(1).dtype) + ", expected i8";
  for (size_t i = 1; i < params; ++i)
    if (!n.is_const(static_cast<int>(i))) return "input " + std::to_string(i) + " must be a constant";
  for (size_t i = 2; i < params; ++i)
    if (n.in(static_cast<int>(i)).dtype != DType::f32) return "input " + std::to_string(i) + " must be f32";
  if (!n.outputs.empty()) {
    DType o = n.outputs[0].dtype;
    if (!is_int8(o) && o != DType::f32) return std::string("output is ") + dtype_name(o) + ", expected u8, i8 or f32";
    if (sum >= 0 && (n.in(sum).dtype != o || n.in(sum).shape != n.outputs[0].shape))
      return "the residual operand must have the output's element type and shape";
  }
  return "";
}

QuantParams quant_params(const NodeDesc& n, int64_t channels) {
  std::string why = check_quantized(n);
  if (!why.empty()) throw CompileFailure(why);
  QuantParams q;
  q.src_scale = static_cast<float>(n.attrs.f("src_scale"));
  q.src_zero_point = static_cast<int32_t>(n.attrs.i("src_zero_point", 0));
  q.out = n.outputs[0].dtype;
  if (q.out != DType::f32) {
    q.dst_scale = static_cast<float>(n.attrs.f("dst_scale"));
    q.dst_zero_point = static_cast<int32_t>(n.attrs.i("dst_zero_point", 0));
  }
  if (!(q.src_scale > 0.f) || !std::isfinite(q.src_scale) || !(q.dst_scale > 0.f) || !std::isfinite(q.dst_scale))
    throw CompileFailure("activation scales must be positive and finite");
  auto count = [](const TensorInfo& t) {
    int64_t c = 1;
    for (auto d : t.shape) c *= d;
    return c;
  };
  if (count(n.in(2)) != channels)
    throw CompileFailure("weight scales have " + std::to_string(count(n.in(2))) + " values, expected one per output channel (" +
                         std::to_string(channels) + ")");
  const float* s = static_cast<const float*>(n.inputs[2].const_data);
  q.wei_scales.assign(s, s + channels);
  q.sum_input = static_cast<int>(n.attrs.i("sum_input", -1));
  if (q.sum_input >= 0) {
    q.sum_scale = static_cast<float>(n.attrs.f("sum_scale", 1.0));
    q.sum_zero_point = static_cast<int32_t>(n.attrs.i("sum_zero_point", 0));
    if (n.attrs.has("sum_clamp") && !n.attrs.is_none("sum_clamp")) {
      for (double v : n.attrs.floats("sum_clamp")) q.sum_clamp.push_back(static_cast<float>(v));
      if (!q.sum_clamp.empty() && (q.sum_clamp.size() != 2 || !(q.sum_clamp[0] <= q.sum_clamp[1])))
        throw CompileFailure("sum_clamp must be [lo, hi] with lo <= hi");
    }
  }
  if (n.inputs.size() - (q.sum_input >= 0 ? 1 : 0) > 3) {
    if (count(n.in(3)) != channels)
      throw CompileFailure("bias has " + std::to_string(count(n.in(3))) + " values, expected " + std::to_string(channels));
    const float* b = static_cast<const float*>(n.inputs[3].const_data);
    q.bias.assign(b, b + channels);
    q.has_bias = true;
  }
  q.post_ops = n.attrs.fused_ops("post_ops");
  return q;
}

dnnl::primitive_attr quant_attr(const QuantParams& q, int wei_mask) {
  dnnl::primitive_attr attr = default_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, wei_mask);
  if (q.src_zero_point != 0) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  if (q.out != DType::f32) {
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    if (q.dst_zero_point != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  }
  dnnl::post_ops ops;
  // the residual operand first (after the clamp to the result's own grid, when there is one):
  // dst = post_ops(clamp(acc * scales + bias) + s_sum * (dst_before - z_sum))
  if (q.sum_input >= 0 && q.sum_clamp.size() == 2)
    ops.append_eltwise(dnnl::algorithm::eltwise_clip, q.sum_clamp[0], q.sum_clamp[1]);
  if (q.sum_input >= 0) ops.append_sum(q.sum_scale, q.sum_zero_point, dnnl_type(q.out));
  append_fused_ops(ops, q.post_ops);
  // (y + z_dst * s_dst) / s_dst = y / s_dst + z_dst: the destination zero point, folded
  if (q.dst_shift != 0.f) ops.append_eltwise(dnnl::algorithm::eltwise_linear, 1.f, q.dst_shift);
  attr.set_post_ops(ops);
  return attr;
}

void QuantizedKernel::finish(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
                             const dnnl::memory::desc& user_src, const void* wei_data,
                             const dnnl::memory::desc& wei_plain, const dnnl::memory::desc& bias_md,
                             const QuantParams& q) {
  prim_ = p;
  scratch_md_ = pd.scratchpad_desc();
  prim_scratch_ = (scratch_md_.get_size() + 63) / 64 * 64;
  src_md_ = pd.query_md(dnnl::query::src_md);
  dst_md_ = pd.query_md(dnnl::query::dst_md);
  src_user_md_ = user_src;
  // (a source of other dimensions is one the kernel pads itself: prepad_source makes its reorder)
  if (src_md_ != user_src && src_md_.get_dims() == user_src.get_dims()) {
    has_src_reorder_ = true;
    src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user_src, cpu_engine(), src_md_));
    src_bytes_ = (src_md_.get_size() + 63) / 64 * 64;
  }
  const char* info = pd.impl_info_str();
  impl_ = info ? info : "onednn";
  note_primitive(pd);
  sum_input_ = q.sum_input;
  using dt = dnnl::memory::data_type;
  consts_.emplace_back(DNNL_ARG_WEIGHTS, pack_constant(wei_data, wei_plain, pd.weights_desc()));
  if (q.has_bias) {
    dnnl::memory b(bias_md, cpu_engine());
    std::memcpy(b.get_data_handle(), q.bias.data(), q.bias.size() * sizeof(float));
    consts_.emplace_back(DNNL_ARG_BIAS, b);
  }
  consts_.emplace_back(DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, const_memory(dt::f32, 1, &q.src_scale, 4));
  consts_.emplace_back(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS,
                       const_memory(dt::f32, static_cast<int64_t>(q.wei_scales.size()), q.wei_scales.data(), 4));
  if (q.src_zero_point != 0)
    consts_.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, const_memory(dt::s32, 1, &q.src_zero_point, 4));
  if (q.out != DType::f32) {
    // oneDNN divides by the destination scale: dst = y / s_dst + z_dst
    consts_.emplace_back(DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, const_memory(dt::f32, 1, &q.dst_scale, 4));
    if (q.dst_zero_point != 0)
      consts_.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, const_memory(dt::s32, 1, &q.dst_zero_point, 4));
  }
}

void QuantizedKernel::prepad_source(int64_t pad_top, int64_t pad_left, uint8_t value) {
  const auto ud = src_user_md_.get_dims();
  prepad_ = true;
  pad_top_ = pad_top;
  pad_left_ = pad_left;
  pad_value_ = value;
  interior_md_ = src_md_.submemory_desc(ud, {0, 0, pad_top, pad_left});
  has_src_reorder_ = true;
  src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src_user_md_, cpu_engine(), interior_md_));
  src_bytes_ = (src_md_.get_size() + 63) / 64 * 64;
}

// The cells of the padded channels-last source outside the interior: whole rows above and below
// it, and the pixels left and right of it in each interior row (1-byte elements).
void QuantizedKernel::fill_border(char* src) const {
  const auto pd = src_md_.get_dims(), ud = src_user_md_.get_dims();
  const int64_t n = pd[0], c = pd[1], hp = pd[2], wp = pd[3], h = ud[2], w = ud[3];
  const size_t row = static_cast<size_t>(wp * c), left = static_cast<size_t>(pad_left_ * c),
               right = static_cast<size_t>((wp - pad_left_ - w) * c);
  for (int64_t b = 0; b < n; ++b) {
    char* img = src + static_cast<size_t>(b * hp) * row;
    for (int64_t y = 0; y < hp; ++y) {
      char* r = img + static_cast<size_t>(y) * row;
      if (y < pad_top_ || y >= pad_top_ + h) {
        std::memset(r, pad_value_, row);
      } else {
        if (left) std::memset(r, pad_value_, left);
        if (right) std::memset(r + row - right, pad_value_, right);
      }
    }
  }
}

void QuantizedKernel::copy_sum_operand(const dnnl::memory::desc& src) {
  sum_copy_ = true;
  sum_md_ = src;
  sum_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src, cpu_engine(), dst_md_));
}

std::unique_ptr<Bound> QuantizedKernel::bind(const TensorView* in, size_t, const TensorView* out, size_t, void* scratch) {
  auto b = std::make_unique<QuantBound>();
  auto& eng = cpu_engine();
  if (sum_copy_)
    b->sum_args = {{DNNL_ARG_FROM, dnnl::memory(sum_md_, eng, in[sum_input_].data)},
                   {DNNL_ARG_TO, dnnl::memory(dst_md_, eng, out[0].data)}};
  char* s = static_cast<char*>(scratch);
  if (has_src_reorder_) {
    dnnl::memory user(src_user_md_, eng, in[0].data);
    dnnl::memory inner(src_md_, eng, s + prim_scratch_);
    b->reorder_args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, prepad_ ? dnnl::memory(interior_md_, eng, s + prim_scratch_) : inner}};
    b->padded = s + prim_scratch_;
    b->args.emplace(DNNL_ARG_SRC, inner);
  } else {
    b->args.emplace(DNNL_ARG_SRC, dnnl::memory(src_md_, eng, in[0].data));
  }
  b->args.emplace(DNNL_ARG_DST, dnnl::memory(dst_md_, eng, out[0].data));
  for (const auto& c : consts_) b->args.emplace(c.first, c.second);
  if (prim_scratch_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, s));
  return b;
}

void QuantizedKernel::run(RunContext& ctx, const TensorView*, TensorView*, Bound* bound) {
  auto* b = static_cast<QuantBound*>(bound);
  if (sum_copy_) sum_reorder_.execute(*ctx.stream, b->sum_args);
  if (prepad_) fill_border(b->padded);
  if (has_src_reorder_) src_reorder_.execute(*ctx.stream, b->reorder_args);
  prim_.execute(*ctx.stream, b->args);
}

}  // namespace opforge_cpu
