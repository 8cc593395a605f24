// Col2Im-15: the inverse of im2col, 2-D: columns [N, C*kh*kw, L] (or unbatched) summed into an
// image [N, C, H, W] (output_size and kernel_size are constant inputs), with strides, dilations
// and pads as attributes.
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class Col2ImKernel : public Kernel {
 public:
  explicit Col2ImKernel(const NodeDesc& n) {
    const Shape& ds = n.in(0).shape;
    batched_ = ds.size() == 3;
    N_ = batched_ ? ds[0] : 1;
    const int64_t cols = ds[ds.size() - 2];
    out_ = n.const_ints(1);
    k_ = n.const_ints(2);
    st_ = n.attrs.ints("strides", {1, 1});
    dl_ = n.attrs.ints("dilations", {1, 1});
    pb_ = n.attrs.ints("pads_begin", {0, 0});
    pe_ = n.attrs.ints("pads_end", {0, 0});
    C_ = cols / (k_[0] * k_[1]);
    for (int d = 0; d < 2; ++d)
      nb_[d] = (out_[d] + pb_[d] + pe_[d] - (dl_[d] * (k_[d] - 1) + 1)) / st_[d] + 1;
  }
  std::string impl_name() const override { return "col2im"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t H = out_[0], W = out_[1];
    std::fill(y, y + N_ * C_ * H * W, T(0));
    const int64_t L = nb_[0] * nb_[1];
    for (int64_t b = 0; b < N_; ++b)
      for (int64_t c = 0; c < C_; ++c)
        for (int64_t ky = 0; ky < k_[0]; ++ky)
          for (int64_t kx = 0; kx < k_[1]; ++kx) {
            const T* col = x + ((b * C_ + c) * k_[0] * k_[1] + ky * k_[1] + kx) * L;
            for (int64_t by = 0; by < nb_[0]; ++by) {
              const int64_t iy = by * st_[0] + ky * dl_[0] - pb_[0];
              if (iy < 0 || iy >= H) continue;
              for (int64_t bx = 0; bx < nb_[1]; ++bx) {
                const int64_t ix = bx * st_[1] + kx * dl_[1] - pb_[1];
                if (ix < 0 || ix >= W) continue;
                y[((b * C_ + c) * H + iy) * W + ix] += col[by * nb_[1] + bx];
              }
            }
          }
  }

 private:
  bool batched_ = true;
  int64_t N_ = 1, C_ = 1, nb_[2] = {1, 1};
  std::vector<int64_t> out_, k_, st_, dl_, pb_, pe_;
};
}  // namespace

std::unique_ptr<Kernel> make_col2im(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<Col2ImKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_col2im(const NodeDesc& n) {
  if (!n.is_const(1) || !n.is_const(2)) return "Col2Im needs constant output and kernel sizes on the CPU device";
  return check_numeric(n);
}

}  // namespace opforge_cpu
