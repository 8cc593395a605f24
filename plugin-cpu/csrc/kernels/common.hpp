// Building blocks for the one-file-per-op kernels: typed unary and binary element-wise loops.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/elementwise.hpp"

namespace opforge_cpu {

template <class T, class F> class UnaryKernel : public ElementwiseKernel {
 public:
  UnaryKernel(const NodeDesc& n, F f) : ElementwiseKernel(n), f_(f) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* a = in[0].ptr<T>();
    T* o = out[0].ptr<T>();
    F f = f_;
    parallel_range(out[0].size(), ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(f(a[i]));
    });
  }

 private:
  F f_;
};

enum class Types { Float, Numeric, Signed };

// A unary kernel over the given type class; f32 goes to oneDNN's eltwise when the op has one
// (`eltwise`: the builder its kernel registers as its post-op, so both paths compute the same).
template <Types types, class F>
std::unique_ptr<Kernel> make_unary(NodeDesc& n, F f, PostOpBuilder eltwise = nullptr) {
  DType t = n.in(0).dtype;
  if (eltwise && t == DType::f32) {
    auto k = make_dnnl_eltwise(n, eltwise(n.attrs));
    if (n.in(0).blocked) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = n.in(0).md;
    }
    return k;
  }
  std::unique_ptr<Kernel> k;
  auto build = [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    k = std::make_unique<UnaryKernel<T, F>>(n, f);
  };
  if constexpr (types == Types::Float) dispatch_float(t, build);
  else dispatch_numeric(t, build);
  return k;
}

inline std::string check_unary(const NodeDesc& n, Types types) {
  DType t = n.in(0).dtype;
  if (types == Types::Float && t != DType::f32 && t != DType::f64) return std::string("element type ") + dtype_name(t) + " is not supported (f32, f64)";
  if (t == DType::boolean || t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

template <class T, class To, class F> class BinaryKernel : public ElementwiseKernel {
 public:
  BinaryKernel(const NodeDesc& n, F f)
      : ElementwiseKernel(n),
        plan_(n.outputs[0].shape,
              align_for_broadcast(n.outputs[0].shape, n.in(0).shape, n.attrs.s("auto_broadcast", "numpy"), -1, false),
              align_for_broadcast(n.outputs[0].shape, n.in(1).shape, n.attrs.s("auto_broadcast", "numpy"), -1, true)),
        f_(f) {
    // An output of another type (comparisons) cannot reuse an input's memory element by element
    // unless the sizes agree, which ElementwiseKernel already checked.
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    broadcast_binary(plan_, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<To>(), ctx.num_threads, f_);
  }

 private:
  BroadcastPlan plan_;
  F f_;
};

template <Types types, class F> std::unique_ptr<Kernel> make_binary(NodeDesc& n, F f) {
  std::unique_ptr<Kernel> k;
  auto build = [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    k = std::make_unique<BinaryKernel<T, T, F>>(n, f);
  };
  if constexpr (types == Types::Float) dispatch_float(n.in(0).dtype, build);
  else dispatch_numeric(n.in(0).dtype, build);
  return k;
}

// Comparisons and logical ops: boolean output (stored as uint8).
template <class F> std::unique_ptr<Kernel> make_compare(NodeDesc& n, F f) {
  std::unique_ptr<Kernel> k;
  if (n.in(0).dtype == DType::boolean) {
    return std::make_unique<BinaryKernel<uint8_t, uint8_t, F>>(n, f);
  }
  dispatch_numeric(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    k = std::make_unique<BinaryKernel<T, uint8_t, F>>(n, f);
  });
  return k;
}

inline std::string check_binary(const NodeDesc& n) {
  DType t = n.in(0).dtype;
  if (t == DType::boolean || t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}
inline std::string check_compare(const NodeDesc& n) {
  DType t = n.in(0).dtype;
  if (t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}
inline std::string check_boolean(const NodeDesc& n) {
  return n.in(0).dtype == DType::boolean ? "" : "logical ops need boolean inputs";
}

// Integer types (and booleans, stored as uint8, where `with_bool`).
template <class F> void dispatch_integral(DType t, F&& f) {
  switch (t) {
    case DType::i8: f(static_cast<int8_t*>(nullptr)); break;
    case DType::i16: f(static_cast<int16_t*>(nullptr)); break;
    case DType::i32: f(static_cast<int32_t*>(nullptr)); break;
    case DType::i64: f(static_cast<int64_t*>(nullptr)); break;
    case DType::u8: case DType::boolean: f(static_cast<uint8_t*>(nullptr)); break;
    case DType::u16: f(static_cast<uint16_t*>(nullptr)); break;
    case DType::u32: f(static_cast<uint32_t*>(nullptr)); break;
    case DType::u64: f(static_cast<uint64_t*>(nullptr)); break;
    default: throw CompileFailure(std::string("element type ") + dtype_name(t) + " is not an integer type");
  }
}

inline std::string check_integral(const NodeDesc& n, bool with_bool = true) {
  DType t = n.in(0).dtype;
  if (is_float(t) || (t == DType::boolean && !with_bool))
    return std::string("element type ") + dtype_name(t) + " is not supported (integers" + (with_bool ? ", boolean)" : ")");
  return "";
}

// A broadcasting binary op over integers (booleans as uint8).
template <class F> std::unique_ptr<Kernel> make_integral_binary(NodeDesc& n, F f) {
  std::unique_ptr<Kernel> k;
  dispatch_integral(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    auto g = [f](T a, T b) { return static_cast<T>(f(a, b)); };
    k = std::make_unique<BinaryKernel<T, T, decltype(g)>>(n, g);
  });
  return k;
}

// x -> bool for floating-point x (IsInf, IsNaN, IsFinite).
template <class T, class F> class PredicateKernel : public Kernel {
 public:
  explicit PredicateKernel(F f) : f_(f) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* a = in[0].ptr<T>();
    uint8_t* o = out[0].ptr<uint8_t>();
    parallel_range(out[0].size(), ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = f_(static_cast<double>(a[i])) ? 1 : 0;
    });
  }

 private:
  F f_;
};

template <class F> std::unique_ptr<Kernel> make_float_predicate(NodeDesc& n, F f) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    k = std::make_unique<PredicateKernel<T, F>>(f);
  });
  return k;
}

// Integer-safe helpers for the arithmetic ops.
template <class T> inline T floor_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    if (b == 0) return 0;
    T r = a % b;
    if constexpr (std::is_signed_v<T>) return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    return r;
  }
}

}  // namespace opforge_cpu
