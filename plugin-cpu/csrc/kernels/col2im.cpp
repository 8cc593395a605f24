// Col2Im-15: the inverse of im2col, 2-D: columns [N, C*kh*kw, L] (or unbatched) summed into an
// image [N, C, H, W] (output_size and kernel_size are constant inputs), with strides, dilations
// and pads as attributes; also 3-D (volumes [N, C, D, H, W] from [N, C*kd*kh*kw, L]).
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
// 2-D images run as volumes of depth 1: every per-axis array holds (z, y, x).
template <class T> class Col2ImKernel : public Kernel {
 public:
  explicit Col2ImKernel(const NodeDesc& n) {
    const Shape& ds = n.in(0).shape;
    batched_ = ds.size() == 3;
    N_ = batched_ ? ds[0] : 1;
    const int64_t cols = ds[ds.size() - 2];
    const auto out = n.const_ints(1), k = n.const_ints(2);
    const size_t sp = out.size();
    if ((sp != 2 && sp != 3) || k.size() != sp) throw CompileFailure("Col2Im needs 2 or 3 output and kernel sizes");
    const auto st = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    const auto dl = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    const auto pb = n.attrs.ints("pads_begin", std::vector<int64_t>(sp, 0));
    const auto pe = n.attrs.ints("pads_end", std::vector<int64_t>(sp, 0));
    if (st.size() != sp || dl.size() != sp || pb.size() != sp || pe.size() != sp)
      throw CompileFailure("Col2Im attributes must have one value per spatial axis");
    const size_t lead = 3 - sp;
    int64_t kvol = 1;
    for (size_t d = 0; d < sp; ++d) {
      out_[lead + d] = out[d];
      k_[lead + d] = k[d];
      st_[lead + d] = st[d];
      dl_[lead + d] = dl[d];
      pb_[lead + d] = pb[d];
      nb_[lead + d] = (out[d] + pb[d] + pe[d] - (dl[d] * (k[d] - 1) + 1)) / st[d] + 1;
      kvol *= k[d];
    }
    C_ = cols / kvol;
  }
  std::string impl_name() const override { return "col2im"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t vol = out_[0] * out_[1] * out_[2];
    std::fill(y, y + N_ * C_ * vol, T(0));
    const int64_t L = nb_[0] * nb_[1] * nb_[2];
    const int64_t kvol = k_[0] * k_[1] * k_[2];
    for (int64_t b = 0; b < N_; ++b)
      for (int64_t c = 0; c < C_; ++c) {
        T* img = y + (b * C_ + c) * vol;
        for (int64_t kz = 0; kz < k_[0]; ++kz)
          for (int64_t ky = 0; ky < k_[1]; ++ky)
            for (int64_t kx = 0; kx < k_[2]; ++kx) {
              const T* col = x + ((b * C_ + c) * kvol + (kz * k_[1] + ky) * k_[2] + kx) * L;
              for (int64_t bz = 0; bz < nb_[0]; ++bz) {
                const int64_t iz = bz * st_[0] + kz * dl_[0] - pb_[0];
                if (iz < 0 || iz >= out_[0]) continue;
                for (int64_t by = 0; by < nb_[1]; ++by) {
                  const int64_t iy = by * st_[1] + ky * dl_[1] - pb_[1];
                  if (iy < 0 || iy >= out_[1]) continue;
                  for (int64_t bx = 0; bx < nb_[2]; ++bx) {
                    const int64_t ix = bx * st_[2] + kx * dl_[2] - pb_[2];
                    if (ix < 0 || ix >= out_[2]) continue;
                    img[(iz * out_[1] + iy) * out_[2] + ix] += col[(bz * nb_[1] + by) * nb_[2] + bx];
                  }
                }
              }
            }
      }
  }

 private:
  bool batched_ = true;
  int64_t N_ = 1, C_ = 1;
  int64_t out_[3] = {1, 1, 1}, k_[3] = {1, 1, 1}, st_[3] = {1, 1, 1}, dl_[3] = {1, 1, 1}, pb_[3] = {0, 0, 0},
          nb_[3] = {1, 1, 1};
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

OPFORGE_KERNEL(Col2Im, make_col2im, check_col2im);

}  // namespace opforge_cpu
