// Reduce*: a reduction over constant axes. Kept and reduced dimensions are each collapsed
// where contiguous; floats accumulate in double (like the reference), integers in int64.
#pragma once

#include <cmath>
#include <limits>

#include "core/elementwise.hpp"

namespace opforge_cpu {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, And, Or };

template <class T> class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const NodeDesc& n, Reduce op) : op_(op) {
    const Shape& s = n.in(0).shape;
    const int64_t r = static_cast<int64_t>(s.size());
    std::vector<bool> red(r, false);
    auto axes = n.const_ints(1);
    identity_ = axes.empty();
    for (auto a : axes) red[normalize_axis(a, r)] = true;
    Shape st = strides_of(s);
    auto push = [](std::vector<int64_t>& dims, std::vector<int64_t>& strides, int64_t d, int64_t stv) {
      if (d == 1) return;
      if (!dims.empty() && strides.back() == stv * d) {
        dims.back() *= d;
        strides.back() = stv;
      } else {
        dims.push_back(d);
        strides.push_back(stv);
      }
    };
    for (int64_t i = 0; i < r; ++i) {
      if (red[i]) push(rdims_, rstr_, s[i], st[i]);
      else push(kdims_, kstr_, s[i], st[i]);
    }
    count_ = 1;
    for (auto d : rdims_) count_ *= d;
    kept_ = 1;
    for (auto d : kdims_) kept_ *= d;
  }
  std::string impl_name() const override { return "reduce"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    if (identity_) {
      std::memcpy(y, x, out[0].bytes());
      return;
    }
    const int kr = static_cast<int>(kdims_.size()), rr = static_cast<int>(rdims_.size());
    parallel_range(kept_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t base = 0, rem = o;
        for (int d = kr - 1; d >= 0; --d) {
          base += (rem % kdims_[d]) * kstr_[d];
          rem /= kdims_[d];
        }
        y[o] = reduce_one(x + base, rr);
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, count_)));
  }

 private:
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>>;
  T reduce_one(const T* x, int rr) const {
    Acc acc;
    switch (op_) {
      case Reduce::Prod: case Reduce::And: acc = 1; break;
      case Reduce::Max: acc = static_cast<Acc>(std::numeric_limits<T>::lowest()); break;
      case Reduce::Min: acc = static_cast<Acc>(std::numeric_limits<T>::max()); break;
      default: acc = 0;
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (op_ == Reduce::Max) acc = -std::numeric_limits<double>::infinity();
      if (op_ == Reduce::Min) acc = std::numeric_limits<double>::infinity();
    }
    const int64_t inner = rr ? rdims_[rr - 1] : 1, is = rr ? rstr_[rr - 1] : 1;
    const int64_t outer = inner ? count_ / inner : 0;
    for (int64_t q = 0; q < outer; ++q) {
      int64_t off = 0, rem = q;
      for (int d = rr - 2; d >= 0; --d) {
        off += (rem % rdims_[d]) * rstr_[d];
        rem /= rdims_[d];
      }
      const T* p = x + off;
      for (int64_t i = 0; i < inner; ++i) {
        Acc v = static_cast<Acc>(p[i * is]);
        switch (op_) {
          case Reduce::Sum: case Reduce::Mean: acc += v; break;
          case Reduce::Max: if (v > acc || v != v) acc = v; break;
          case Reduce::Min: if (v < acc || v != v) acc = v; break;
          case Reduce::Prod: acc *= v; break;
          case Reduce::L1: acc += v < 0 ? -v : v; break;
          case Reduce::L2: acc += v * v; break;
          case Reduce::And: acc = acc && v; break;
          case Reduce::Or: acc = acc || v; break;
        }
      }
    }
    if (op_ == Reduce::Mean) {
      if constexpr (std::is_floating_point_v<T>) return static_cast<T>(count_ ? acc / count_ : NAN);
      else return static_cast<T>(count_ ? acc / static_cast<Acc>(count_) : 0);
    }
    if (op_ == Reduce::L2) return static_cast<T>(std::sqrt(static_cast<double>(acc)));
    return static_cast<T>(acc);
  }

  Reduce op_;
  bool identity_ = false;
  std::vector<int64_t> kdims_, kstr_, rdims_, rstr_;
  int64_t count_ = 1, kept_ = 1;
};

inline std::unique_ptr<Kernel> make_reduce(const NodeDesc& n, Reduce op) {
  std::unique_ptr<Kernel> k;
  if (op == Reduce::And || op == Reduce::Or) return std::make_unique<ReduceKernel<uint8_t>>(n, op);
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ReduceKernel<OPF_TYPE_OF(tag)>>(n, op); });
  return k;
}

inline std::string check_reduce(const NodeDesc& n) {
  if (!n.is_const(1)) return "Reduce ops need constant axes on the CPU device";
  DType t = n.in(0).dtype;
  if (t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

}  // namespace opforge_cpu
