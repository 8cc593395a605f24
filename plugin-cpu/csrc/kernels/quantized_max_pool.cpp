// QuantizedMaxPool (opforge_cpu/ops/quantized_max_pool.py): oneDNN max pooling of a u8/s8
// tensor, read in the layout its producer wrote (a quantized convolution's nhwc) and written in
// the layout oneDNN picks for it. oneDNN 3.2 pools int8 plain nchw only with its reference
// implementation (43 ms for SqueezeNet's 96x109x109): such a source is reordered to channels-last
// in scratch first.
#include <unordered_map>

#include "core/nn.hpp"
#include "core/primitive_log.hpp"

namespace opforge_cpu {

namespace {
struct PoolBound : Bound {
  std::unordered_map<int, dnnl::memory> args, reorder_args;
};

bool is_reference(const dnnl::primitive_desc_base& pd) {
  const char* info = pd.impl_info_str();
  return info == nullptr || std::string(info).rfind("ref", 0) == 0;
}

dnnl::memory::format_tag channels_last(size_t rank) {
  using t = dnnl::memory::format_tag;
  return rank == 3 ? t::nwc : rank == 4 ? t::nhwc : t::ndhwc;
}

class QuantizedMaxPoolKernel : public Kernel {
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
    user_md_ = md_of(n.in(0));
    auto dst = dnnl::memory::desc(to_dims(ys), dnnl_type(n.outputs[0].dtype), dnnl::memory::format_tag::any);
    auto mk = [&](const dnnl::memory::desc& src) {
      return dnnl::pooling_forward::primitive_desc(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::pooling_max, src, dst, to_dims(strides),
                                                   to_dims(kernel), ddil, to_dims(pb), to_dims(pe), default_attr());
    };
    auto pd = mk(user_md_);
    src_md_ = user_md_;
    if (is_reference(pd)) {
      auto cl = dnnl::memory::desc(to_dims(xs), dnnl_type(n.in(0).dtype), channels_last(xs.size()));
      auto cl_pd = mk(cl);
      if (!is_reference(cl_pd)) {
        pd = cl_pd;
        src_md_ = cl;
        reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user_md_, cpu_engine(), cl));
        src_bytes_ = (cl.get_size() + 63) / 64 * 64;
      }
    }
    prim_ = dnnl::pooling_forward(pd);
    note_primitive(pd);
    scratch_md_ = pd.scratchpad_desc();
    prim_scratch_ = (scratch_md_.get_size() + 63) / 64 * 64;
    dst_md_ = pd.dst_desc();
    const char* info = pd.impl_info_str();
    impl_ = std::string(src_bytes_ ? "reorder+" : "") + (info ? info : "onednn");
    n.outputs[0].md = dst_md_;
    n.outputs[0].blocked = dst_md_ != plain_md(n.outputs[0].dtype, ys);
  }
  size_t scratch_bytes() const override { return prim_scratch_ + src_bytes_ + 64; }
  std::string impl_name() const override { return impl_; }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView* out, size_t, void* scratch) override {
    auto b = std::make_unique<PoolBound>();
    auto& eng = cpu_engine();
    char* s = static_cast<char*>(scratch);
    if (src_bytes_) {
      dnnl::memory inner(src_md_, eng, s + prim_scratch_);
      b->reorder_args = {{DNNL_ARG_FROM, dnnl::memory(user_md_, eng, in[0].data)}, {DNNL_ARG_TO, inner}};
      b->args.emplace(DNNL_ARG_SRC, inner);
    } else {
      b->args.emplace(DNNL_ARG_SRC, dnnl::memory(src_md_, eng, in[0].data));
    }
    b->args.emplace(DNNL_ARG_DST, dnnl::memory(dst_md_, eng, out[0].data));
    if (prim_scratch_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, s));
    return b;
  }
  void run(RunContext& ctx, const TensorView*, TensorView*, Bound* bound) override {
    auto* b = static_cast<PoolBound*>(bound);
    if (src_bytes_) reorder_.execute(*ctx.stream, b->reorder_args);
    prim_.execute(*ctx.stream, b->args);
  }

 private:
  dnnl::primitive prim_;
  dnnl::reorder reorder_;
  dnnl::memory::desc user_md_, src_md_, dst_md_, scratch_md_;
  size_t prim_scratch_ = 0, src_bytes_ = 0;
  std::string impl_;
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
