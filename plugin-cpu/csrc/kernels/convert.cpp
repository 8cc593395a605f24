// Convert: any element type to any other, as x86 C++ static_cast does (the reference's rule):
// float to integer truncates toward zero through a 32- or 64-bit conversion whose out-of-range
// result (and NaN's) is the minimum integer, then wraps; integers wrap; to boolean is "!= 0".
#include "kernels/common.hpp"

#include <limits>

namespace opforge_cpu {

namespace {
template <class T> double load(const void* p, int64_t i, DType t) {
  if (t == DType::f16) return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  if (t == DType::bf16) return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
  return static_cast<double>(static_cast<const T*>(p)[i]);
}

template <class D> D float_to_int(double v) {
  double t = std::trunc(v);
  if constexpr (std::is_same_v<D, uint64_t>) {
    if (t >= 0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
    if (t < 0 && t >= -9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(t));
    return uint64_t(1) << 63;
  } else if constexpr (std::is_same_v<D, int64_t> || std::is_same_v<D, uint32_t>) {
    bool ok = t >= -9223372036854775808.0 && t < 9223372036854775808.0;
    return static_cast<D>(ok ? static_cast<int64_t>(t) : std::numeric_limits<int64_t>::min());
  } else {
    bool ok = t >= -2147483648.0 && t < 2147483648.0;
    return static_cast<D>(ok ? static_cast<int64_t>(t) : int64_t(std::numeric_limits<int32_t>::min()));
  }
}

template <class S, class D> void convert_loop(const S* x, D* y, int64_t n, int threads) {
  parallel_range(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_same_v<D, bool>) {
        y[i] = x[i] != S(0);
      } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
        y[i] = float_to_int<D>(static_cast<double>(x[i]));
      } else {
        y[i] = static_cast<D>(x[i]);
      }
    }
  });
}

class ConvertKernel : public Kernel {
 public:
  ConvertKernel(DType from, DType to) : from_(from), to_(to) {}
  std::string impl_name() const override { return std::string("convert_") + dtype_name(from_) + "_" + dtype_name(to_); }
  int inplace_input(int out) const override { return from_ == to_ && out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    int64_t n = in[0].size();
    if (from_ == to_) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
      return;
    }
    // Half types go through float.
    if (from_ == DType::f16 || from_ == DType::bf16 || to_ == DType::f16 || to_ == DType::bf16) {
      for (int64_t i = 0; i < n; ++i) {
        double v = 0;
        if (from_ == DType::f16 || from_ == DType::bf16) v = load<uint16_t>(in[0].data, i, from_);
        else dispatch_any(from_, [&](auto tag) { using S = OPF_TYPE_OF(tag); v = static_cast<double>(in[0].ptr<S>()[i]); });
        store(out[0].data, i, v);
      }
      return;
    }
    dispatch_any(from_, [&](auto stag) {
      using S = OPF_TYPE_OF(stag);
      dispatch_any(to_, [&](auto dtag) {
        using D = OPF_TYPE_OF(dtag);
        convert_loop<S, D>(in[0].ptr<S>(), out[0].ptr<D>(), n, ctx.num_threads);
      });
    });
  }

 private:
  template <class F> static void dispatch_any(DType t, F&& f) {
    if (t == DType::boolean) f(static_cast<bool*>(nullptr));
    else dispatch_numeric(t, f);
  }
  void store(void* p, int64_t i, double v) const {
    switch (to_) {
      case DType::f16: static_cast<uint16_t*>(p)[i] = f32_to_f16(static_cast<float>(v)); break;
      case DType::bf16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(static_cast<float>(v)); break;
      case DType::boolean: static_cast<uint8_t*>(p)[i] = v != 0; break;
      default:
        dispatch_numeric(to_, [&](auto tag) {
          using D = OPF_TYPE_OF(tag);
          if constexpr (std::is_integral_v<D>) static_cast<D*>(p)[i] = float_to_int<D>(v);
          else static_cast<D*>(p)[i] = static_cast<D>(v);
        });
    }
  }
  DType from_, to_;
};
}  // namespace

std::unique_ptr<Kernel> make_convert(NodeDesc& n) {
  return std::make_unique<ConvertKernel>(n.in(0).dtype, n.outputs[0].dtype);
}

std::unique_ptr<Kernel> make_convert_like(NodeDesc& n) {
  return std::make_unique<ConvertKernel>(n.in(0).dtype, n.outputs[0].dtype);
}

OPFORGE_KERNEL(Convert, make_convert, nullptr);
OPFORGE_KERNEL(ConvertLike, make_convert_like, nullptr);

}  // namespace opforge_cpu
