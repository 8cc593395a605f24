// Type dispatch and element-wise loops (unary, broadcasting binary) shared by many kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/threading.hpp"

#include "core/kernel.hpp"

namespace opforge_cpu {

// Dispatch on an element type: F is called with a typed null pointer, e.g.
// dispatch_numeric(t, [&](auto tag) { using T = std::remove_pointer_t<decltype(tag)>; ... });
template <class F> void dispatch_numeric(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::f64: f(static_cast<double*>(nullptr)); break;
    case DType::i8: f(static_cast<int8_t*>(nullptr)); break;
    case DType::i16: f(static_cast<int16_t*>(nullptr)); break;
    case DType::i32: f(static_cast<int32_t*>(nullptr)); break;
    case DType::i64: f(static_cast<int64_t*>(nullptr)); break;
    case DType::u8: f(static_cast<uint8_t*>(nullptr)); break;
    case DType::u16: f(static_cast<uint16_t*>(nullptr)); break;
    case DType::u32: f(static_cast<uint32_t*>(nullptr)); break;
    case DType::u64: f(static_cast<uint64_t*>(nullptr)); break;
    default: throw CompileFailure(std::string("element type ") + dtype_name(t) + " is not supported here");
  }
}

// Every type, by storage (f16/bf16 as uint16, boolean as uint8): for copies and gathers.
template <class F> void dispatch_storage(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f(static_cast<uint8_t*>(nullptr)); break;
    case 2: f(static_cast<uint16_t*>(nullptr)); break;
    case 4: f(static_cast<uint32_t*>(nullptr)); break;
    case 8: f(static_cast<uint64_t*>(nullptr)); break;
    default: throw CompileFailure("unsupported element size");
  }
}

template <class F> void dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::f64: f(static_cast<double*>(nullptr)); break;
    default: throw CompileFailure(std::string("element type ") + dtype_name(t) + " is not supported here; expected f32 or f64");
  }
}

#define OPF_TYPE_OF(tag) std::remove_pointer_t<decltype(tag)>

// Threads for a loop of n elements: small loops stay on one thread (fork/join costs ~µs).
inline int threads_for(int64_t n, int max_threads, int64_t grain = 32768) {
  int64_t t = n / grain;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(t, max_threads)));
}

// Calls f(begin, end) on chunks of [0, n) in parallel.
template <class F> void parallel_range(int64_t n, int max_threads, F&& f, int64_t grain = 32768) {
  int nt = threads_for(n, max_threads, grain);
  if (nt <= 1) {
    f(int64_t{0}, n);
    return;
  }
  parallel_blocks(n, nt, f);
}

// A broadcast iteration plan over an output shape for two inputs: collapsed dims, strides.
struct BroadcastPlan {
  std::vector<int64_t> dims, sa, sb;  // collapsed; last dim is the inner loop
  int64_t outer = 1, inner = 1;
  BroadcastPlan(const Shape& out, const Shape& a, const Shape& b);
  // Offsets into a and b of the start of outer row r.
  void offsets(int64_t r, int64_t& oa, int64_t& ob) const {
    oa = ob = 0;
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
      int64_t i = r % dims[d];
      r /= dims[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
  }
};

// out[i] = f(a[ia], b[ib]) with NumPy broadcasting.
template <class Ta, class Tb, class To, class F>
void broadcast_binary(const BroadcastPlan& p, const Ta* a, const Tb* b, To* o, int threads, F f) {
  const int64_t inner = p.inner;
  const int64_t sa = p.sa.back(), sb = p.sb.back();
  parallel_range(p.outer, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t oa, ob;
      p.offsets(r, oa, ob);
      const Ta* pa = a + oa;
      const Tb* pb = b + ob;
      To* po = o + r * inner;
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[i]);
      } else if (sa == 1 && sb == 0) {
        const Tb vb = pb[0];
        for (int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], vb);
      } else if (sa == 0 && sb == 1) {
        const Ta va = pa[0];
        for (int64_t i = 0; i < inner; ++i) po[i] = f(va, pb[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) po[i] = f(pa[i * sa], pb[i * sb]);
      }
    }
  }, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner)));
}

// Shapes of a binary op's inputs aligned to the output (pdpd broadcast puts b at `axis`).
Shape align_for_broadcast(const Shape& out, const Shape& in, const std::string& mode, int64_t axis, bool is_b);

// Base of element-wise kernels: output 0 may overwrite input 0 (or 1) when shapes match.
class ElementwiseKernel : public Kernel {
 public:
  explicit ElementwiseKernel(const NodeDesc& n) {
    const auto& o = n.outputs.at(0);
    for (size_t i = 0; i < n.inputs.size() && i < 2; ++i) {
      const auto& in = n.in(static_cast<int>(i));
      if (in.shape == o.shape && dtype_size(in.dtype) == dtype_size(o.dtype)) {
        inplace_ = static_cast<int>(i);
        break;
      }
    }
  }
  int inplace_input(int out) const override { return out == 0 ? inplace_ : -1; }

 protected:
  int inplace_ = -1;
};

// A unary f32 op run by a oneDNN eltwise primitive (vectorised, threaded): the same eltwise the
// op's kernel registered as its post-op.
std::unique_ptr<Kernel> make_dnnl_eltwise(const NodeDesc& n, const Eltwise& op);

}  // namespace opforge_cpu
