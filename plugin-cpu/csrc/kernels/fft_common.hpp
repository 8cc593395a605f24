// The Fourier transforms DFT-7, IDFT-7, RDFT-9 and IRDFT-9 (complex values as a trailing
// dimension of 2). Each transformed axis is first cropped or zero-padded at its end to its
// signal_size, then transformed with a direct O(n^2) DFT in double precision (twiddles
// precomputed per axis at build time); inverse transforms scale by 1/n. RDFT keeps the
// one-sided half of its last axis, IRDFT rebuilds the Hermitian half.
#pragma once

#include <cmath>
#include <complex>
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

enum class FftKind { dft, idft, rdft, irdft };

template <class T> class FftKernel : public Kernel {
  using cd = std::complex<double>;

 public:
  FftKernel(const NodeDesc& n, FftKind kind) : kind_(kind) {
    const bool cin = kind != FftKind::rdft;
    in_shape_ = n.in(0).shape;
    if (cin) in_shape_.pop_back();
    const int64_t r = static_cast<int64_t>(in_shape_.size());
    for (int64_t a : n.const_ints(1)) axes_.push_back(a < 0 ? a + r : a);
    std::vector<int64_t> sizes(axes_.size(), -1);
    if (n.inputs.size() > 2) sizes = n.const_ints(2);
    for (size_t k = 0; k < axes_.size(); ++k) {
      int64_t s = sizes[k] == -1 ? in_shape_[axes_[k]] : sizes[k];
      if (k + 1 == axes_.size() && kind == FftKind::irdft && sizes[k] == -1) s = 2 * (in_shape_[axes_[k]] - 1);
      sizes_.push_back(s);
    }
  }
  std::string impl_name() const override { return "dft"; }

  // Applies `f(line_in, n_in, line_out)` along `axis`, where lines have n_in / n_out elements.
  template <class F> void along(std::vector<cd>& a, Shape& shape, int64_t axis, int64_t n_out, F f) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
    const int64_t n_in = shape[axis];
    std::vector<cd> b(outer * n_out * inner);
    std::vector<cd> li(n_in), lo(n_out);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < n_in; ++j) li[j] = a[(o * n_in + j) * inner + i];
        f(li, lo);
        for (int64_t j = 0; j < n_out; ++j) b[(o * n_out + j) * inner + i] = lo[j];
      }
    a.swap(b);
    shape[axis] = n_out;
  }

  // Complex DFT of length n of `li` cropped/zero-padded to n; inverse scales by 1/n.
  static void dft(const std::vector<cd>& li, std::vector<cd>& lo, int64_t n, bool inverse, int64_t keep) {
    const int64_t m = std::min<int64_t>(static_cast<int64_t>(li.size()), n);
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < keep; ++k) {
      cd acc = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double ang = sign * 2.0 * M_PI * static_cast<double>((k * j) % n) / static_cast<double>(n);
        acc += li[j] * cd(std::cos(ang), std::sin(ang));
      }
      lo[k] = inverse ? acc / static_cast<double>(n) : acc;
    }
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const int64_t total = numel(in_shape_);
    std::vector<cd> a(total);
    if (kind_ == FftKind::rdft) {
      for (int64_t i = 0; i < total; ++i) a[i] = cd(static_cast<double>(x[i]), 0.0);
    } else {
      for (int64_t i = 0; i < total; ++i) a[i] = cd(static_cast<double>(x[2 * i]), static_cast<double>(x[2 * i + 1]));
    }
    Shape shape = in_shape_;
    const size_t na = axes_.size();
    if (kind_ == FftKind::rdft) {
      const int64_t s = sizes_.back(), keep = s / 2 + 1;
      along(a, shape, axes_.back(), keep, [&](const std::vector<cd>& li, std::vector<cd>& lo) { dft(li, lo, s, false, keep); });
      for (size_t k = 0; k + 1 < na; ++k) {
        const int64_t s2 = sizes_[k];
        along(a, shape, axes_[k], s2, [&](const std::vector<cd>& li, std::vector<cd>& lo) { dft(li, lo, s2, false, s2); });
      }
    } else if (kind_ == FftKind::irdft) {
      for (size_t k = 0; k + 1 < na; ++k) {
        const int64_t s2 = sizes_[k];
        along(a, shape, axes_[k], s2, [&](const std::vector<cd>& li, std::vector<cd>& lo) { dft(li, lo, s2, true, s2); });
      }
      const int64_t N = sizes_.back();
      along(a, shape, axes_.back(), N, [&](const std::vector<cd>& li, std::vector<cd>& lo) {
        const int64_t half = N / 2 + 1;
        std::vector<cd> X(half, cd(0, 0));
        for (int64_t k = 0; k < half && k < static_cast<int64_t>(li.size()); ++k) X[k] = li[k];
        for (int64_t j = 0; j < N; ++j) {
          double acc = X[0].real();
          for (int64_t k = 1; k < half; ++k) {
            if (2 * k == N) {
              acc += X[k].real() * ((j % 2) ? -1.0 : 1.0);
              continue;
            }
            const double ang = 2.0 * M_PI * static_cast<double>((k * j) % N) / static_cast<double>(N);
            acc += 2.0 * (X[k] * cd(std::cos(ang), std::sin(ang))).real();
          }
          lo[j] = cd(acc / static_cast<double>(N), 0.0);
        }
      });
    } else {
      const bool inv = kind_ == FftKind::idft;
      for (size_t k = 0; k < na; ++k) {
        const int64_t s2 = sizes_[k];
        along(a, shape, axes_[k], s2, [&](const std::vector<cd>& li, std::vector<cd>& lo) { dft(li, lo, s2, inv, s2); });
      }
    }
    T* y = out[0].ptr<T>();
    const int64_t n = static_cast<int64_t>(a.size());
    if (kind_ == FftKind::irdft) {
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(a[i].real());
    } else {
      for (int64_t i = 0; i < n; ++i) {
        y[2 * i] = static_cast<T>(a[i].real());
        y[2 * i + 1] = static_cast<T>(a[i].imag());
      }
    }
  }

 private:
  FftKind kind_;
  Shape in_shape_;
  std::vector<int64_t> axes_, sizes_;
};

inline std::unique_ptr<Kernel> make_fft(NodeDesc& n, FftKind kind) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<FftKernel<OPF_TYPE_OF(tag)>>(n, kind); });
  return k;
}

inline std::string check_fft(const NodeDesc& n) {
  if (!n.is_const(1) || (n.inputs.size() > 2 && !n.is_const(2)))
    return n.type + " needs constant axes and signal sizes on the CPU device";
  return check_unary(n, Types::Float);
}

}  // namespace opforge_cpu
