// GridSample-9: data [N, C, H, W] sampled at the normalised (x, y) locations of grid
// [N, Ho, Wo, 2]: nearest (ties to even), bilinear or bicubic (a = -0.75), with zeros, border or
// reflection padding, align_corners as in the reference (coordinates in the data's type).
#include <array>
#include <cmath>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class W> W reflect(W x, W lo, W hi) {
  const W span = hi - lo;
  if (span <= 0) return lo;
  if (x < lo) {
    W dist = lo - x, n = std::floor(dist / span), r = dist - n * span;
    return std::fmod(n, W(2)) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    W dist = x - hi, n = std::floor(dist / span), r = dist - n * span;
    return std::fmod(n, W(2)) == 0 ? hi - r : lo + r;
  }
  return x;
}

template <class W> std::array<W, 4> cubic_coeffs(W t) {
  const W a = W(-0.75), x = std::abs(t);
  return {((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a,
          ((a + 2) * x - (a + 3)) * x * x + 1,
          ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
          ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a};
}

template <class T, class G> class GridSampleKernel : public Kernel {
  using W = T;

 public:
  explicit GridSampleKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    gs_ = n.in(1).shape;
    align_ = n.attrs.b("align_corners", false);
    const std::string m = n.attrs.s("mode", "bilinear"), p = n.attrs.s("padding_mode", "zeros");
    mode_ = m == "nearest" ? 0 : m == "bilinear" ? 1 : 2;
    pad_ = p == "zeros" ? 0 : p == "border" ? 1 : 2;
  }
  std::string impl_name() const override { return "grid_sample"; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const G* g = in[1].ptr<G>();
    T* y = out[0].ptr<T>();
    const int64_t N = ds_[0], C = ds_[1], H = ds_[2], Wd = ds_[3], Ho = gs_[1], Wo = gs_[2];
    const int64_t dims[2] = {H, Wd};
    parallel_range(N * Ho * Wo, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / (Ho * Wo), pos = r % (Ho * Wo);
        W co[2];
        W lo[2], hi[2];
        for (int k = 0; k < 2; ++k) {
          W v = static_cast<W>(g[r * 2 + (1 - k)]);
          const W size = static_cast<W>(dims[k]);
          co[k] = align_ ? (v + 1) / 2 * (size - 1) : ((v + 1) * size - 1) / 2;
          lo[k] = align_ ? W(0) : W(-0.5);
          hi[k] = align_ ? size - 1 : size - W(0.5);
          if (mode_ == 0) co[k] = std::nearbyint(co[k]);
          if (pad_ == 1 && mode_ != 2) {
            if (co[k] < lo[k] || co[k] > hi[k]) co[k] = std::min(std::max(co[k], W(0)), size - 1);
          } else if (pad_ == 2) {
            co[k] = reflect(co[k], lo[k], hi[k]);
          }
        }
        auto pixel = [&](int64_t c, int64_t iy, int64_t ix) -> W {
          int64_t idx[2] = {iy, ix};
          for (int k = 0; k < 2; ++k) {
            if (pad_ == 0) {
              if (idx[k] < 0 || idx[k] >= dims[k]) return W(0);
            } else if (pad_ == 1) {
              idx[k] = std::min<int64_t>(std::max<int64_t>(idx[k], 0), dims[k] - 1);
            } else {
              W rv = std::trunc(reflect(static_cast<W>(idx[k]), lo[k], hi[k]));
              idx[k] = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(rv), 0), dims[k] - 1);
            }
          }
          return static_cast<W>(x[((b * C + c) * H + idx[0]) * Wd + idx[1]]);
        };
        for (int64_t c = 0; c < C; ++c) {
          W acc = 0;
          if (mode_ == 0) {
            acc = pixel(c, static_cast<int64_t>(co[0]), static_cast<int64_t>(co[1]));
          } else {
            const W by = std::floor(co[0]), bx = std::floor(co[1]);
            const W fy = co[0] - by, fx = co[1] - bx;
            const int64_t iy = static_cast<int64_t>(by), ix = static_cast<int64_t>(bx);
            if (mode_ == 1) {
              const W wy[2] = {1 - fy, fy}, wx[2] = {1 - fx, fx};
              for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) acc = acc + wy[i] * wx[j] * pixel(c, iy + i, ix + j);
            } else {
              auto wy = cubic_coeffs(fy), wx = cubic_coeffs(fx);
              for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc = acc + wy[i] * wx[j] * pixel(c, iy + i - 1, ix + j - 1);
            }
          }
          y[(b * C + c) * Ho * Wo + pos] = static_cast<T>(acc);
        }
      }
    }, 256);
  }

 private:
  Shape ds_, gs_;
  bool align_ = false;
  int mode_ = 1, pad_ = 0;
};
}  // namespace

std::unique_ptr<Kernel> make_grid_sample(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    if (n.in(1).dtype == DType::f64) k = std::make_unique<GridSampleKernel<T, double>>(n);
    else k = std::make_unique<GridSampleKernel<T, float>>(n);
  });
  return k;
}
std::string check_grid_sample(const NodeDesc& n) {
  if (n.in(1).dtype != DType::f32 && n.in(1).dtype != DType::f64) return "GridSample grid must be f32 or f64";
  if (n.in(0).shape.size() != 4) return "GridSample supports 4-D data only";
  return check_unary(n, Types::Float);
}

}  // namespace opforge_cpu
