#include "core/elementwise.hpp"

#include "core/dnnl_util.hpp"
#include "core/nan_eltwise.hpp"

namespace opforge_cpu {

BroadcastPlan::BroadcastPlan(const Shape& out, const Shape& a, const Shape& b) {
  const size_t r = out.size();
  // Strides of a and b against the output's dims (0 where broadcast).
  std::vector<int64_t> d(out.begin(), out.end()), xa(r, 0), xb(r, 0);
  int64_t ma = 1, mb = 1;
  for (int i = static_cast<int>(r) - 1; i >= 0; --i) {
    xa[i] = a[i] == 1 ? 0 : ma;
    xb[i] = b[i] == 1 ? 0 : mb;
    ma *= a[i];
    mb *= b[i];
  }
  // Collapse neighbouring dims that iterate the same way in both inputs.
  for (size_t i = 0; i < r; ++i) {
    if (d[i] == 1) continue;
    if (!dims.empty() && sa.back() == xa[i] * d[i] && sb.back() == xb[i] * d[i]) {
      dims.back() *= d[i];
      sa.back() = xa[i];
      sb.back() = xb[i];
    } else {
      dims.push_back(d[i]);
      sa.push_back(xa[i]);
      sb.push_back(xb[i]);
    }
  }
  if (dims.empty()) {
    dims = {1};
    sa = {0};
    sb = {0};
  }
  inner = dims.back();
  outer = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) outer *= dims[i];
}

Shape align_for_broadcast(const Shape& out, const Shape& in, const std::string& mode, int64_t axis, bool is_b) {
  Shape s(out.size(), 1);
  if (mode == "pdpd" && is_b && in.size() < out.size()) {
    int64_t start = axis >= 0 ? axis : static_cast<int64_t>(out.size() - in.size());
    for (size_t i = 0; i < in.size(); ++i) s[start + i] = in[i];
    return s;
  }
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i];
  return s;
}

namespace {
// For the algorithms oneDNN maps NaN to a number (eltwise_loses_nan) this runs only on blocked
// layouts with padded channels (elsewhere make_nan_safe_eltwise's loop does): out of place, then
// every NaN of the input is copied to the output (a select, so the pass vectorises).
class DnnlEltwise : public DnnlKernel {
 public:
  DnnlEltwise(const NodeDesc& n, const Eltwise& op) : restore_nan_(eltwise_loses_nan(op.alg)) {
    // Element-wise: any layout works, so keep the input's (blocked or plain).
    auto md = md_of(n.in(0));
    floats_ = static_cast<int64_t>(md.get_size() / sizeof(float));
    dnnl::eltwise_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, op.alg, md, md,
                                             op.alpha, op.beta, default_attr());
    set_primitive(dnnl::eltwise_forward(pd), pd);
    arg_input(DNNL_ARG_SRC, 0, md);
    arg_output(DNNL_ARG_DST, 0, md);
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    DnnlKernel::run(ctx, in, out, bound);
    if (!restore_nan_) return;
    ctx.stream->wait();
    const float* x = in[0].ptr<float>();
    float* y = out[0].ptr<float>();
    const int64_t n = floats_;
    parallel_blocks(n, n > 65536 ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = x[i] != x[i] ? x[i] : y[i];
    });
  }
  int inplace_input(int out) const override { return out == 0 && !restore_nan_ ? 0 : -1; }

 private:
  bool restore_nan_;
  int64_t floats_ = 0;
};
}  // namespace

std::unique_ptr<Kernel> make_dnnl_eltwise(const NodeDesc& n, const Eltwise& op) {
  if (eltwise_loses_nan(op.alg)) {
    // The loop runs over flat memory: fine for any layout whose padding holds no elements
    // (relu/clip/exp of a zero pad would not stay zero).
    const int64_t count = static_cast<int64_t>(md_of(n.in(0)).get_size() / sizeof(float));
    if (count == std::max<int64_t>(1, numel(n.in(0).shape))) return make_nan_safe_eltwise(op, count);
  }
  return std::make_unique<DnnlEltwise>(n, op);
}

}  // namespace opforge_cpu
