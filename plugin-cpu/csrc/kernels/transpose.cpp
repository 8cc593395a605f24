// Transpose: permutes dimensions (constant permutation), collapsing dimensions that stay
// adjacent so the inner loop is as long as possible. An input in a oneDNN layout (a
// convolution's nChw16c or nhwc output) is permuted by one oneDNN reorder instead.
#include "kernels/common.hpp"

#include <algorithm>

#include "core/dnnl_util.hpp"
#include "kernels/int8_layout.hpp"

namespace opforge_cpu {

namespace {
class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const NodeDesc& n) : esize_(dtype_size(n.in(0).dtype)) {
    const Shape& xs = n.in(0).shape;
    auto perm = n.const_ints(1);
    if (perm.empty()) for (int64_t i = static_cast<int64_t>(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
    Shape st = strides_of(xs);
    // Output dims in order, with the input stride each one walks; merge runs that are contiguous.
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t d = xs[perm[i]], s = st[perm[i]];
      if (d == 1) continue;
      if (!dims_.empty() && strides_.back() == s * d) {
        dims_.back() *= d;
        strides_.back() = s;
      } else {
        dims_.push_back(d);
        strides_.push_back(s);
      }
    }
    if (dims_.empty()) { dims_ = {1}; strides_ = {1}; }
    total_ = numel(xs);
  }
  std::string impl_name() const override { return dims_.size() == 1 ? "copy" : "permute"; }
  int inplace_input(int out) const override { return dims_.size() == 1 && out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (dims_.size() == 1) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
      return;
    }
    dispatch_storage(in[0].dtype, [&](auto tag) {
      using T = OPF_TYPE_OF(tag);
      const T* x = in[0].ptr<T>();
      T* y = out[0].ptr<T>();
      const int r = static_cast<int>(dims_.size());
      const int64_t inner = dims_[r - 1], is = strides_[r - 1];
      const int64_t rows = total_ / inner;
      if (strides_[r - 2] == 1 && is > 1 && dims_[r - 2] >= 16 && inner >= 16) {
        // The input's contiguous dimension is the output's second-innermost one (attention's
        // K -> K^T, [1, 128, 4, 64] -> [1, 4, 64, 128]): a plain 2-D transpose per outer
        // index. Walking the output row by row read one element per input cache line (0.05 ms
        // for BERT's 32K elements); 16x16 tiles read whole cache lines and keep the 16 output
        // rows they write in L1: 0.040 -> 0.025 ms. (Small transposes keep the row loop: tiles of
        // a few elements cost more than they save.) Also a channels-last LayerNorm's
        // [1, C, H, W] -> [1, H, W, C] of ConvNeXt/EdgeNeXt (inner = C, from 16 on): the row
        // loop read one element per input line, 0.20 ms for 48x64x64.
        // Each output row of a tile is written whole before the next (a outer, i inner): with
        // i outer, the 16 rows a tile writes at once lay 4 KiB-multiples apart for a
        // power-of-two inner (NHWC -> NCHW, inner = H * W = 4096) and fought over one L1 set:
        // 0.81 ms for 48x4096 floats.
        const int64_t a_n = dims_[r - 2], planes = rows / a_n;
        constexpr int64_t kTile = 16;
        const int64_t a_tiles = (a_n + kTile - 1) / kTile;
        parallel_range(planes * a_tiles, ctx.num_threads, [&](int64_t b, int64_t e) {
          // (sizes and strides in locals: a store through a u8/i8 pointer may alias anything
          // the lambda captured, which would be reloaded after every element)
          const int64_t inner = dims_[r - 1], is = strides_[r - 1], a_n = dims_[r - 2];
          for (int64_t job = b; job < e; ++job) {
            const int64_t plane = job / a_tiles, a0 = (job % a_tiles) * kTile;
            const int64_t a1 = std::min(a_n, a0 + kTile);
            int64_t rr = plane, off = 0;
            for (int d = r - 3; d >= 0; --d) {
              off += (rr % dims_[d]) * strides_[d];
              rr /= dims_[d];
            }
            T* yp = y + plane * a_n * inner;
            const T* xp = x + off;
            for (int64_t i0 = 0; i0 < inner; i0 += kTile) {
              const int64_t i1 = std::min(inner, i0 + kTile);
              for (int64_t a = a0; a < a1; ++a)
                for (int64_t i = i0; i < i1; ++i) yp[a * inner + i] = xp[a + i * is];
            }
          }
        }, std::max<int64_t>(1, 16384 / (kTile * inner)));
        return;
      }
      parallel_range(rows, ctx.num_threads, [&](int64_t b, int64_t e) {
        const int64_t inner = dims_[r - 1], is = strides_[r - 1];  // (locals: see above)
        for (int64_t row = b; row < e; ++row) {
          int64_t rr = row, off = 0;
          for (int d = r - 2; d >= 0; --d) {
            off += (rr % dims_[d]) * strides_[d];
            rr /= dims_[d];
          }
          T* yp = y + row * inner;
          const T* xp = x + off;
          for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i * is];
        }
      }, std::max<int64_t>(1, 16384 / inner));
    });
  }

 private:
  std::vector<int64_t> dims_, strides_;
  int64_t total_ = 0;
  size_t esize_;
};
// The output is the input's bytes as they lie, described as a channels-last tensor (see
// make_transpose): a copy, or nothing when the planner lets it write over its input.
class ChannelsLastViewKernel : public Kernel {
 public:
  std::string impl_name() const override { return "channels_last_view"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext&, const TensorView* in, TensorView* out, Bound*) override {
    if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
  }
};
}  // namespace

std::unique_ptr<Kernel> make_transpose(NodeDesc& n) {
  if (n.in(0).blocked) {
    // The output's bytes are the input's elements with their axes laid out in perm's order, so
    // a oneDNN reorder from the input's layout into that order writes the transpose directly.
    // ConvNeXt/EdgeNeXt's NCHW -> NHWC after a (depthwise) convolution ran a reorder to plain
    // and then the permute loop: EdgeNeXt int8's u8 1x48x56x56, 41 + 106 us at 1 thread.
    auto perm = n.const_ints(1);
    const Shape& xs = n.in(0).shape;
    if (perm.empty())
      for (int64_t i = static_cast<int64_t>(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
    TensorInfo dst = n.outputs[0];
    dst.blocked = true;
    dst.md = ordered_md(n.in(0).dtype, xs, std::vector<int>(perm.begin(), perm.end()));
    return make_reorder_kernel(n.in(0), dst);
  }
  // NHWC -> NCHW of a plain tensor whose readers all take a oneDNN layout (EdgeNeXt/ConvNeXt's
  // Transpose back after the channels-last LayerNorm and MLP, before the next depthwise
  // convolution): the input's bytes already are the output in channels-last order, the layout a
  // convolution's own nhwc output has, so the output is declared that and nothing moves
  // (EdgeNeXt int8: 1x56x56x48 u8 permuted in 55-110 us a step before).
  const Shape& xs = n.in(0).shape;
  const size_t rank = xs.size();
  if ((rank == 4 || rank == 5) && !n.allow_blocked_output.empty() && n.allow_blocked_output[0] && numel(xs) > 0 &&
      (n.in(0).dtype == DType::f32 || n.in(0).dtype == DType::u8 || n.in(0).dtype == DType::i8)) {
    auto perm = n.const_ints(1);
    // output axis perm[j] of the input is output axis j: the input's memory order (0..r-1) is
    // the output's axes inv[0], inv[1], ...
    std::vector<int> inv(rank, -1);
    bool valid = perm.size() == rank;
    for (size_t j = 0; valid && j < rank; ++j) {
      valid = perm[j] >= 0 && perm[j] < static_cast<int64_t>(rank) && inv[perm[j]] < 0;
      if (valid) inv[perm[j]] = static_cast<int>(j);
    }
    if (valid && inv == channels_last_order(rank)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = ordered_md(n.outputs[0].dtype, n.outputs[0].shape, inv);
      return std::make_unique<ChannelsLastViewKernel>();
    }
  }
  return std::make_unique<TransposeKernel>(n);
}

std::string check_transpose(const NodeDesc& n) {
  return n.is_const(1) ? "" : "Transpose needs a constant permutation on the CPU device";
}

OPFORGE_KERNEL(Transpose, make_transpose, check_transpose).layout_flexible();

}  // namespace opforge_cpu
