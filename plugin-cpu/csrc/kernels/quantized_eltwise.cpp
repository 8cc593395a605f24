// QuantizedEltwise (opforge_cpu/ops/quantized_eltwise.py): Add, Subtract or Multiply of two u8/s8
// tensors (NumPy broadcasting), each with its scale and zero point, written on the output's
// grid with the QDQ graph's f32 arithmetic: ((a - z_a) * s_a) op ((b - z_b) * s_b), divided by
// the output scale, rounded half to even, shifted, saturated. A SiLU's x * sigmoid(x) and a
// squeeze-excitation's per-channel product, between quantized convolutions.
//
// Layout: channels-last when a full-size operand is (a quantized convolution's output) and the
// readers take it; plain otherwise. A per-channel operand [N, C, 1, 1] has the same bytes in
// both, so it is read in place either way; an operand in any other layout is reordered first.
// The loops' clamps (x > lo ? x : lo) are maxps/minps only when the compiler may ignore FP
// exceptions: with trapping math (GCC's default) they stay branches and the loop stays scalar.
// No kernel here reads the exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <cmath>
#include <numeric>

#include "core/elementwise.hpp"
#include "kernels/int8_layout.hpp"

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

enum class Operation { Add, Subtract, Multiply };


// real value of a quantized byte, as DequantizeLinear computes it in f32
struct Dequant {
  float s;
  float z;
  float operator()(float q) const { return (q - z) * s; }
};

// QuantizeLinear of y (f32): rint(y / s) + z, saturated to [lo, hi]. Rounding half to even by
// adding and subtracting 1.5 * 2^23 (exact below 2^22, where every value that does not saturate
// lies): no libm call, and the comparisons are maxps/minps, so the loop vectorises. NaN goes to
// the low bound (the first comparison is false for it).
struct Quant {
  float s, z, lo, hi;
  float operator()(float y) const {
    const float big = 4194304.f, magic = 12582912.f;
    float v = y / s;
    v = v > -big ? v : -big;
    v = v < big ? v : big;
    v = ((v + magic) - magic) + z;
    v = v > lo ? v : lo;
    return v < hi ? v : hi;
  }
};

class QuantizedEltwiseKernel : public StagedKernel {
 public:
  explicit QuantizedEltwiseKernel(NodeDesc& n) {
    const std::string op = n.attrs.s("operation");
    op_ = op == "Add" ? Operation::Add : op == "Subtract" ? Operation::Subtract : Operation::Multiply;
    const Shape& ys = n.outputs[0].shape;
    const size_t rank = ys.size();
    ta_ = n.in(0).dtype;
    tb_ = n.in(1).dtype;
    to_ = n.outputs[0].dtype;
    da_ = {static_cast<float>(n.attrs.f("a_scale")), static_cast<float>(n.attrs.i("a_zero_point", 0))};
    db_ = {static_cast<float>(n.attrs.f("b_scale")), static_cast<float>(n.attrs.i("b_zero_point", 0))};
    const bool u8 = to_ == DType::u8;
    q_ = {static_cast<float>(n.attrs.f("dst_scale")), static_cast<float>(n.attrs.i("dst_zero_point", 0)), u8 ? 0.f : -128.f,
          u8 ? 255.f : 127.f};
    // both operands aligned to the output's rank
    Shape sa = pad_shape(n.in(0).shape, rank), sb = pad_shape(n.in(1).shape, rank);
    std::vector<int> order(rank);
    std::iota(order.begin(), order.end(), 0);
    const bool blocked_ok = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
    if (rank >= 3 && blocked_ok) {
      const auto cl = channels_last_order(rank);
      for (int i = 0; i < 2; ++i) {
        const TensorInfo& x = n.in(i);
        if (x.shape == ys && x.blocked && same_dense_layout(ys, dense_order(x.md), cl)) order = cl;
      }
    }
    // (an operand of lower rank is staged with its own shape: its padded shape has the same bytes)
    staged_.add(n.in(0), sub_order(order, rank - n.in(0).shape.size()));
    staged_.add(n.in(1), sub_order(order, rank - n.in(1).shape.size()));
    Shape po(rank), pa(rank), pb(rank);
    for (size_t i = 0; i < rank; ++i) {
      po[i] = ys[order[i]];
      pa[i] = sa[order[i]];
      pb[i] = sb[order[i]];
    }
    plan_ = std::make_unique<BroadcastPlan>(po, pa, pb);
    n.outputs[0].md = ordered_md(to_, ys, order);
    std::vector<int> plain(rank);
    std::iota(plain.begin(), plain.end(), 0);
    n.outputs[0].blocked = !same_dense_layout(ys, order, plain);
  }
  std::string impl_name() const override { return staged_name("loop") + int8_isa_suffix(); }

 private:
  static Shape pad_shape(const Shape& s, size_t rank) {
    Shape p(rank - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  }
  // the axes of a trailing-aligned operand of rank `rank - lead`, in the order of `order`
  static std::vector<int> sub_order(const std::vector<int>& order, size_t lead) {
    std::vector<int> o;
    for (int a : order)
      if (a >= static_cast<int>(lead)) o.push_back(a - static_cast<int>(lead));
    return o;
  }
  void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const override {
    with_int8_input(ta_, data[0], [&](auto* a) {
      with_int8_input(tb_, data[1], [&](auto* b) {
        with_int8_output(to_, out[0].data, [&](auto* y, float, float) { with_op(ctx, a, b, y); });
      });
    });
  }
  template <class A, class B, class O> void with_op(RunContext& ctx, const A* a, const B* b, O* y) const {
    const Dequant da = da_, db = db_;
    const Quant q = q_;
    auto out = [q](float v) { return static_cast<O>(static_cast<int32_t>(q(v))); };
    switch (op_) {
      case Operation::Add:
        loop(ctx, a, b, y, [=](A x, B z) { return out(da(x) + db(z)); });
        break;
      case Operation::Subtract:
        loop(ctx, a, b, y, [=](A x, B z) { return out(da(x) - db(z)); });
        break;
      case Operation::Multiply:
        loop(ctx, a, b, y, [=](A x, B z) { return out(da(x) * db(z)); });
        break;
    }
  }
  template <class A, class B, class O, class F> void loop(RunContext& ctx, const A* a, const B* b, O* y, F f) const {
    const bool wide = int8_avx512();
    parallel_range(plan_->outer, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      if (wide) rows_avx512(a, b, y, f, r0, r1);
      else rows(a, b, y, f, r0, r1);
    }, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, plan_->inner)));
  }
  template <class A, class B, class O, class F>
  OPFORGE_INT8_AVX512 void rows_avx512(const A* a, const B* b, O* y, F f, int64_t r0, int64_t r1) const {
    rows(a, b, y, f, r0, r1);
  }
  // broadcast_binary's walk over rows [r0, r1), with the row length, strides and f's scales in
  // locals: a store through a byte pointer may alias any object the compiler can see, so read
  // through captures the trip count is unknown and nothing vectorises
  template <class A, class B, class O, class F>
  OPFORGE_INT8_INLINE void rows(const A* a, const B* b, O* y, F f, int64_t r0, int64_t r1) const {
    const BroadcastPlan& p = *plan_;
    const int64_t inner = p.inner, sa = p.sa.back(), sb = p.sb.back();
    const F fn = f;
    for (int64_t r = r0; r < r1; ++r) {
      int64_t oa, ob;
      p.offsets(r, oa, ob);
      const A* pa = a + oa;
      const B* pb = b + ob;
      O* po = y + r * inner;
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i], pb[i]);
      } else if (sa == 1 && sb == 0) {
        const B vb = pb[0];
        for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i], vb);
      } else if (sa == 0 && sb == 1) {
        const A va = pa[0];
        for (int64_t i = 0; i < inner; ++i) po[i] = fn(va, pb[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i * sa], pb[i * sb]);
      }
    }
  }

  Operation op_ = Operation::Add;
  DType ta_ = DType::u8, tb_ = DType::u8, to_ = DType::u8;
  Dequant da_{1.f, 0.f}, db_{1.f, 0.f};
  Quant q_{1.f, 0.f, 0.f, 255.f};
  std::unique_ptr<BroadcastPlan> plan_;
};
}  // namespace

std::string check_quantized_eltwise(const NodeDesc& n) {
  if (n.inputs.size() != 2) return "needs two inputs";
  for (int i = 0; i < 2; ++i)
    if (!is_int8(n.in(i).dtype)) return "input " + std::to_string(i) + " is " + dtype_name(n.in(i).dtype) + ", expected u8 or i8";
  if (n.outputs.empty() || !is_int8(n.outputs[0].dtype)) return "output must be u8 or i8";
  const Shape& ys = n.outputs[0].shape;
  for (int i = 0; i < 2; ++i) {
    const Shape& s = n.in(i).shape;
    if (s.size() > ys.size()) return "input " + std::to_string(i) + " has a higher rank than the output";
    for (size_t k = 0; k < s.size(); ++k) {
      const int64_t d = s[s.size() - 1 - k], o = ys[ys.size() - 1 - k];
      if (d != o && d != 1) return "input " + std::to_string(i) + " does not broadcast to the output";
    }
  }
  const std::string op = n.attrs.s("operation", "");
  if (op != "Add" && op != "Subtract" && op != "Multiply") return "operation '" + op + "' is not Add, Subtract or Multiply";
  for (const char* k : {"a_scale", "b_scale", "dst_scale"}) {
    const double s = n.attrs.f(k, 0.0);
    if (!(s > 0) || !std::isfinite(s)) return std::string(k) + " must be positive and finite";
  }
  return "";
}

std::unique_ptr<Kernel> make_quantized_eltwise(NodeDesc& n) {
  std::string why = check_quantized_eltwise(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedEltwiseKernel>(n);
}

OPFORGE_KERNEL(QuantizedEltwise, make_quantized_eltwise, check_quantized_eltwise).layout_flexible();

}  // namespace opforge_cpu
