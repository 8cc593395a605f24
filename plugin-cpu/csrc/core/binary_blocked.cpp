#include "core/binary_blocked.hpp"

#include <string>

#include "core/channels_last_bcast.hpp"
#include "core/dnnl_util.hpp"
#include "core/elementwise.hpp"

namespace opforge_cpu {

bool has_blocked_input(const NodeDesc& n) {
  for (size_t i = 0; i < n.inputs.size() && i < 2; ++i)
    if (n.inputs[i].info.blocked) return true;
  return false;
}

namespace {

class DnnlBinary : public DnnlKernel {
 public:
  DnnlBinary(dnnl::algorithm alg, int full, int other, const dnnl::memory::desc& full_md,
             const dnnl::memory::desc& other_md, const dnnl::memory::desc& dst_md)
      : inplace_(full_md == dst_md ? full : -1) {
    dnnl::binary::primitive_desc pd(cpu_engine(), alg, full_md, other_md, dst_md, default_attr());
    set_primitive(dnnl::binary(pd), pd);
    arg_input(DNNL_ARG_SRC_0, full, full_md);
    arg_input(DNNL_ARG_SRC_1, other, other_md);
    arg_output(DNNL_ARG_DST, 0, dst_md);
  }
  // oneDNN's binary may write over src0 when the layouts agree.
  int inplace_input(int out) const override { return out == 0 ? inplace_ : -1; }

 private:
  int inplace_;
};

// Reorders the blocked inputs to plain (into scratch), then runs a kernel built for plain inputs.
class PlainInputsKernel : public Kernel {
 public:
  // `make_plain` builds a kernel that reads its views when it runs (no bind()).
  PlainInputsKernel(const NodeDesc& n, const PlainKernelMaker& make_plain) : n_in_(n.inputs.size()) {
    NodeDesc plain = n;
    for (size_t i = 0; i < plain.inputs.size(); ++i) {
      TensorInfo& t = plain.inputs[i].info;
      if (!t.blocked) continue;
      Slot s;
      s.index = static_cast<int>(i);
      s.src = t.md;
      s.dst = plain_md(t.dtype, t.shape);
      dnnl::reorder::primitive_desc pd(cpu_engine(), s.src, cpu_engine(), s.dst, default_attr());
      if (pd.scratchpad_desc().get_size() != 0) throw CompileFailure("the reorder of a blocked input needs scratch memory");
      s.reorder = dnnl::reorder(pd);
      s.offset = scratch_;
      scratch_ += (s.dst.get_size() + 63) / 64 * 64;
      slots_.push_back(std::move(s));
      t.blocked = false;
      t.md = dnnl::memory::desc();
    }
    plain.allow_blocked_output.assign(plain.outputs.size(), false);
    inner_ = make_plain(plain);
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    std::vector<TensorView> views(in, in + n_in_);
    char* scratch = static_cast<char*>(ctx.scratch);
    for (auto& s : slots_) {
      void* dst = scratch + s.offset;
      dnnl::memory from(s.src, cpu_engine(), views[s.index].data), to(s.dst, cpu_engine(), dst);
      s.reorder.execute(*ctx.stream, from, to);
      views[s.index].data = dst;
    }
    ctx.stream->wait();
    RunContext inner_ctx = ctx;
    inner_ctx.scratch = scratch + scratch_;
    inner_->run(inner_ctx, views.data(), out, nullptr);
  }
  size_t scratch_bytes() const override { return scratch_ + inner_->scratch_bytes(); }
  std::string impl_name() const override { return "reorder+" + inner_->impl_name(); }

 private:
  struct Slot {
    int index = 0;
    dnnl::memory::desc src, dst;
    dnnl::reorder reorder;
    size_t offset = 0;
  };
  std::vector<Slot> slots_;
  std::unique_ptr<Kernel> inner_;
  size_t scratch_ = 0;
  size_t n_in_;
};

// Whether oneDNN has a JIT binary for these layouts. Its reference one ("ref:any") is far slower
// than reordering to plain and running our own loop: a UNet's Add of a blocked and a plain tensor
// of one shape took 63 ms there, the plain path ~1 ms.
bool fast_binary(dnnl::algorithm alg, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                 const dnnl::memory::desc& dst) {
  try {
    dnnl::binary::primitive_desc pd(cpu_engine(), alg, a, b, dst, default_attr());
    const char* impl = pd.impl_info_str();
    return impl != nullptr && std::string(impl).rfind("ref", 0) != 0;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

std::unique_ptr<Kernel> make_plain_inputs_kernel(const NodeDesc& n, const PlainKernelMaker& make_plain) {
  return std::make_unique<PlainInputsKernel>(n, make_plain);
}

std::unique_ptr<Kernel> make_blocked_binary(NodeDesc& n, dnnl::algorithm alg, bool commutative,
                                            const PlainKernelMaker& make_plain) {
  const TensorInfo& out = n.outputs.at(0);
  const std::string mode = n.attrs.s("auto_broadcast", "numpy");
  const bool f32 = n.in(0).dtype == DType::f32 && n.in(1).dtype == DType::f32 && out.dtype == DType::f32;
  int full = -1;
  for (int i = 0; i < 2 && full < 0 && f32; ++i)
    if (n.in(i).shape == out.shape && (i == 0 || commutative)) full = i;
  if (full >= 0) {
    const int other = 1 - full;
    const TensorInfo& a = n.in(full);
    const TensorInfo& b = n.in(other);
    Shape b_aligned = align_for_broadcast(out.shape, b.shape, mode, -1, other == 1);
    // A blocked second input is used as it is only with the output's rank (oneDNN broadcasts
    // dims of size 1 of an equal-rank src1).
    if (!b.blocked || b.shape.size() == out.shape.size()) {
      dnnl::memory::desc a_md = md_of(a);
      dnnl::memory::desc b_md = b.blocked ? b.md : plain_md(DType::f32, b_aligned);
      const bool keep_blocked = a.blocked && !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
      dnnl::memory::desc dst_md = keep_blocked ? a.md : plain_md(DType::f32, out.shape);
      // A bf16 full input (a bf16 convolution's output: the squeeze-excitation scale, emit.py
      // _bf16_se_reader) is multiplied in f32 arithmetic; the result is bf16 in its layout where
      // every reader takes bf16 ("bf16_output"), else f32 in its layout's strides (or plain).
      if (a.blocked && a.md.get_data_type() == dnnl::memory::data_type::bf16 &&
          !(keep_blocked && n.attrs.b("bf16_output", false))) {
        const bool dense = a.md.get_inner_nblks() == 0 && a.md.get_format_kind() == dnnl::memory::format_kind::blocked;
        dst_md = keep_blocked && dense ? dnnl::memory::desc(a.md.get_dims(), dnnl::memory::data_type::f32, a.md.get_strides())
                                       : plain_md(DType::f32, out.shape);
      }
      // A per-channel scale or shift of a channels-last tensor: our loop (channels_last_bcast.cpp)
      if (keep_blocked && dst_md == a_md) {
        if (auto k = make_channels_last_bcast(alg, full, other, out.shape, a_md, b_md, dst_md)) {
          n.outputs[0].blocked = true;
          n.outputs[0].md = dst_md;
          return k;
        }
      }
      // Without a JIT implementation for this combination, take the plain path below.
      if (fast_binary(alg, a_md, b_md, dst_md)) {
        auto k = std::make_unique<DnnlBinary>(alg, full, other, a_md, b_md, dst_md);
        if (keep_blocked && dst_md != plain_md(DType::f32, out.shape)) {
          n.outputs[0].blocked = true;
          n.outputs[0].md = dst_md;
        }
        return k;
      }
    }
  }
  return std::make_unique<PlainInputsKernel>(n, make_plain);
}

}  // namespace opforge_cpu
