// GridSample-9: data [N, C, H, W] sampled at the normalised (x, y) locations of grid
// [N, Ho, Wo, 2]: nearest (ties to even), bilinear or bicubic (a = -0.75), with zeros, border or
// reflection padding, align_corners as in the reference (coordinates in the data's type).
// Volumetric data [N, C, D, H, W] with grid [N, Do, Ho, Wo, 3] (x, y, z): nearest or trilinear.
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
    // sp spatial axes (2: H, W; 3: D, H, W), outermost first; the grid lists them x, y(, z)
    const int sp = static_cast<int>(ds_.size()) - 2;
    const int64_t N = ds_[0], C = ds_[1];
    int64_t dims[3] = {1, 1, 1}, in_sp = 1, out_sp = 1;
    for (int k = 0; k < sp; ++k) {
      dims[k] = ds_[2 + k];
      in_sp *= dims[k];
      out_sp *= gs_[1 + k];
    }
    parallel_range(N * out_sp, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / out_sp, pos = r % out_sp;
        W co[3], lo[3], hi[3];
        for (int k = 0; k < sp; ++k) {
          W v = static_cast<W>(g[r * sp + (sp - 1 - k)]);
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
        auto pixel = [&](int64_t c, const int64_t* at) -> W {
          int64_t idx[3];
          int64_t off = 0;
          for (int k = 0; k < sp; ++k) {
            idx[k] = at[k];
            if (pad_ == 0) {
              if (idx[k] < 0 || idx[k] >= dims[k]) return W(0);
            } else if (pad_ == 1) {
              idx[k] = std::min<int64_t>(std::max<int64_t>(idx[k], 0), dims[k] - 1);
            } else {
              W rv = std::trunc(reflect(static_cast<W>(idx[k]), lo[k], hi[k]));
              idx[k] = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(rv), 0), dims[k] - 1);
            }
            off = off * dims[k] + idx[k];
          }
          return static_cast<W>(x[(b * C + c) * in_sp + off]);
        };
        int64_t base[3];
        W frac[3];
        for (int k = 0; k < sp; ++k) {
          const W f = mode_ == 0 ? co[k] : std::floor(co[k]);
          base[k] = static_cast<int64_t>(f);
          frac[k] = co[k] - f;
        }
        for (int64_t c = 0; c < C; ++c) {
          W acc = 0;
          if (mode_ == 0) {
            acc = pixel(c, base);
          } else if (mode_ == 1) {
            // 2^sp corners; weights multiply outermost axis first, as the reference does
            for (int corner = 0; corner < (1 << sp); ++corner) {
              int64_t at[3];
              W wgt = 1;
              for (int k = 0; k < sp; ++k) {
                const int bit = (corner >> (sp - 1 - k)) & 1;
                at[k] = base[k] + bit;
                wgt = k == 0 ? (bit ? frac[k] : 1 - frac[k]) : wgt * (bit ? frac[k] : 1 - frac[k]);
              }
              acc = acc + wgt * pixel(c, at);
            }
          } else {
            auto wy = cubic_coeffs(frac[0]), wx = cubic_coeffs(frac[1]);
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                const int64_t at[2] = {base[0] + i - 1, base[1] + j - 1};
                acc = acc + wy[i] * wx[j] * pixel(c, at);
              }
          }
          y[(b * C + c) * out_sp + pos] = static_cast<T>(acc);
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
  const size_t r = n.in(0).shape.size();
  if (r != 4 && r != 5) return "GridSample supports 4-D and 5-D data only";
  if (r == 5 && n.attrs.s("mode", "bilinear") == "bicubic") return "bicubic GridSample is 2-D only";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(GridSample, make_grid_sample, check_grid_sample);

}  // namespace opforge_cpu
