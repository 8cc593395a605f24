// ShuffleChannels (CPU-internal, opforge_cpu/ops/shuffle_channels.py): ShuffleNet's Concat ->
// Reshape [N, g, C/g, H, W] -> Transpose [0, 2, 1, 3, 4] -> Reshape -> Split as one step. Output
// channel k of the shuffled tensor is channel (k % g) * (C / g) + k / g of the concatenation of
// the inputs; output p holds the shuffled channels of splits[p]. The step reads each branch where
// its convolution wrote it and writes the parts directly: before, the branches were reordered to
// nchw and concatenated, transposed, and each half copied out again (three passes, and at two
// threads each of them read lines the other core had just written).
// Layouts: nchw in -> nchw out (one memcpy per output plane); nhwc in -> nhwc out where every
// reader takes a blocked tensor (per pixel, the output channels gathered from the inputs' pixels;
// g = 2 over two equal inputs, ShuffleNet's case, interleaves them); nhwc in -> nchw out for a
// plain reader. bf16 inputs (a bf16 program's convolutions) stay bf16 where the emitter marked the
// outputs bf16-storable (bf16_output); otherwise, and for any other layout (nChw16c), the inputs
// are reordered to plain f32 first (make_plain_inputs_kernel).
#include <cstdint>
#include <cstring>

#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
enum class Layout { nchw, nhwc, other };

Layout layout_of(const TensorInfo& t) {
  if (!t.blocked) return Layout::nchw;
  if (!t.md.get_inner_blks().empty() || t.md.get_ndims() != 4) return Layout::other;
  const auto s = t.md.get_strides();
  const auto& d = t.shape;
  if (s[3] == 1 && s[2] == d[3] && s[1] == d[2] * d[3] && s[0] == d[1] * d[2] * d[3]) return Layout::nchw;
  if (s[1] == 1 && s[3] == d[1] && s[2] == d[3] * d[1] && s[0] == d[1] * d[2] * d[3]) return Layout::nhwc;
  return Layout::other;
}

size_t elem_size_of(const TensorInfo& t) {
  if (!t.blocked) return dtype_size(t.dtype);
  switch (t.md.get_data_type()) {
    case dnnl::memory::data_type::f32: return 4;
    case dnnl::memory::data_type::bf16: return 2;
    default: return 0;
  }
}

class ShuffleChannelsKernel : public Kernel {
 public:
  // in_layout/out_layout: nchw or nhwc; es: 4 (f32) or 2 (bf16)
  ShuffleChannelsKernel(const NodeDesc& n, Layout in_layout, Layout out_layout, size_t es)
      : in_(in_layout), out_(out_layout), es_(es) {
    const Shape& s0 = n.in(0).shape;
    batch_ = s0[0];
    hw_ = s0[2] * s0[3];
    int64_t c = 0;
    for (const auto& in : n.inputs) {
      in_ch_.push_back(in.info.shape[1]);
      c += in.info.shape[1];
    }
    const int64_t g = n.attrs.i("group");
    const int64_t per = c / g;
    std::vector<int64_t> first(in_ch_.size() + 1, 0);  // first channel of each input in the concatenation
    for (size_t i = 0; i < in_ch_.size(); ++i) first[i + 1] = first[i] + in_ch_[i];
    for (int64_t k = 0; k < c; ++k) {
      int64_t src = (k % g) * per + k / g;
      size_t i = 0;
      while (src >= first[i + 1]) ++i;
      src_in_.push_back(static_cast<int32_t>(i));
      src_ch_.push_back(src - first[i]);
    }
    int64_t k0 = 0;
    for (const auto& o : n.outputs) {
      part_first_.push_back(k0);
      part_ch_.push_back(o.shape[1]);
      k0 += o.shape[1];
    }
    // ShuffleNet: g = 2 over two inputs of C/2 channels; each part starting at an even channel
    // with an even count interleaves input 0's and input 1's channels from part_first / 2 on.
    interleave_ = g == 2 && in_ch_.size() == 2 && in_ch_[0] == per;
    for (size_t p = 0; p < part_ch_.size(); ++p) interleave_ = interleave_ && part_first_[p] % 2 == 0 && part_ch_[p] % 2 == 0;
  }

  std::string impl_name() const override {
    const char* lay = in_ == Layout::nchw ? "nchw" : out_ == Layout::nhwc ? "nhwc" : "nhwc_to_nchw";
    return std::string("shuffle:") + lay + (es_ == 2 ? "_bf16" : "");
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (es_ == 4) run_typed<uint32_t>(ctx, in, out);
    else run_typed<uint16_t>(ctx, in, out);
  }

 private:
  template <class T> void run_typed(RunContext& ctx, const TensorView* in, TensorView* out) {
    const int64_t parts = static_cast<int64_t>(part_ch_.size());
    if (in_ == Layout::nchw) {  // one plane per output channel
      const int64_t c = static_cast<int64_t>(src_in_.size());
      parallel_range(batch_ * c, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t job = b; job < e; ++job) {
          const int64_t nb = job / c, k = job % c;
          const int i = src_in_[k];
          const T* src = in[i].ptr<T>() + (nb * in_ch_[i] + src_ch_[k]) * hw_;
          T* dst = output_plane<T>(out, nb, k);
          std::memcpy(dst, src, static_cast<size_t>(hw_) * sizeof(T));
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(hw_, 1)));
      return;
    }
    if (out_ == Layout::nhwc) {  // per pixel, gather the output channels
      const int64_t c = static_cast<int64_t>(src_in_.size());
      parallel_range(batch_ * hw_, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t px = b; px < e; ++px) {
          for (int64_t p = 0; p < parts; ++p) {
            T* dst = out[p].ptr<T>() + px * part_ch_[p];
            if (interleave_) {
              const T* a = in[0].ptr<T>() + px * in_ch_[0] + part_first_[p] / 2;
              const T* bb = in[1].ptr<T>() + px * in_ch_[1] + part_first_[p] / 2;
              const int64_t m = part_ch_[p] / 2;
              for (int64_t j = 0; j < m; ++j) {
                dst[2 * j] = a[j];
                dst[2 * j + 1] = bb[j];
              }
            } else {
              for (int64_t j = 0; j < part_ch_[p]; ++j) {
                const int64_t k = part_first_[p] + j;
                const int i = src_in_[k];
                dst[j] = in[i].ptr<T>()[px * in_ch_[i] + src_ch_[k]];
              }
            }
          }
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)));
      return;
    }
    // nhwc in, nchw out (a plain reader): one strided gather per output plane
    const int64_t c = static_cast<int64_t>(src_in_.size());
    parallel_range(batch_ * c, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t job = b; job < e; ++job) {
        const int64_t nb = job / c, k = job % c;
        const int i = src_in_[k];
        const int64_t ci = in_ch_[i];
        const T* src = in[i].ptr<T>() + nb * hw_ * ci + src_ch_[k];
        T* dst = output_plane<T>(out, nb, k);
        for (int64_t q = 0; q < hw_; ++q) dst[q] = src[q * ci];
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(hw_, 1)));
  }

  // The plane of shuffled channel k of image nb in a planar (nchw) output: in the output part
  // (of the split) that holds channel k.
  template <class T> T* output_plane(TensorView* out, int64_t nb, int64_t k) const {
    const int64_t parts = static_cast<int64_t>(part_ch_.size());
    int64_t p = 0;
    while (p + 1 < parts && k >= part_first_[p + 1]) ++p;
    return out[p].ptr<T>() + (nb * part_ch_[p] + k - part_first_[p]) * hw_;
  }

  Layout in_, out_;
  size_t es_;
  int64_t batch_ = 1, hw_ = 1;
  std::vector<int64_t> in_ch_, part_first_, part_ch_, src_ch_;
  std::vector<int32_t> src_in_;
  bool interleave_ = false;
};
}  // namespace

std::string check_shuffle_channels(const NodeDesc& n) {
  const Shape& s0 = n.in(0).shape;
  if (s0.size() != 4) return "input 0 is not [N, C, H, W]";
  int64_t c = 0;
  for (const auto& in : n.inputs) {
    const Shape& s = in.info.shape;
    if (s.size() != 4 || s[0] != s0[0] || s[2] != s0[2] || s[3] != s0[3])
      return "inputs are not [N, *, H, W] of one N, H, W";
    if (in.info.dtype != n.outputs[0].dtype) return "inputs and outputs of different element types";
    c += s[1];
  }
  const int64_t g = n.attrs.i("group");
  if (g < 1 || c % g) return "group " + std::to_string(g) + " does not divide " + std::to_string(c) + " channels";
  int64_t total = 0;
  for (const auto& o : n.outputs) {
    if (o.shape.size() != 4 || o.shape[0] != s0[0] || o.shape[2] != s0[2] || o.shape[3] != s0[3])
      return "outputs are not [N, *, H, W] of the inputs' N, H, W";
    total += o.shape[1];
  }
  if (total != c) return "outputs hold " + std::to_string(total) + " channels, expected " + std::to_string(c);
  const size_t es = dtype_size(n.outputs[0].dtype);
  if (es != 4 && es != 2) return std::string("element type ") + dtype_name(n.outputs[0].dtype) + " (expected 2 or 4 bytes)";
  return "";
}

std::unique_ptr<Kernel> make_shuffle_channels(NodeDesc& n) {
  const Layout lay = layout_of(n.in(0));
  const size_t es = elem_size_of(n.in(0));
  bool same = lay != Layout::other && (es == 4 || es == 2);
  for (const auto& in : n.inputs) same = same && layout_of(in.info) == lay && elem_size_of(in.info) == es;
  bool blocked_out = !n.allow_blocked_output.empty();
  for (bool b : n.allow_blocked_output) blocked_out = blocked_out && b;
  const bool plain_type = es == dtype_size(n.outputs[0].dtype);
  // bf16 inputs give bf16 outputs (any layout then counts as "blocked" for the planner), only
  // where the emitter found every reader takes bf16 and the planner lets every output be blocked
  const bool bf16 = es == 2 && n.outputs[0].dtype == DType::f32;
  const bool ok = same && (plain_type ? true : (bf16 && blocked_out && n.attrs.b("bf16_output", false)));
  if (!ok) {
    return make_plain_inputs_kernel(n, [](NodeDesc& p) -> std::unique_ptr<Kernel> {
      return std::make_unique<ShuffleChannelsKernel>(p, Layout::nchw, Layout::nchw, dtype_size(p.outputs[0].dtype));
    });
  }
  const Layout out_lay = lay == Layout::nhwc && blocked_out ? Layout::nhwc : Layout::nchw;
  if (out_lay == Layout::nhwc || bf16) {
    using t = dnnl::memory::format_tag;
    const auto dt = bf16 ? dnnl::memory::data_type::bf16 : dnnl_type(n.outputs[0].dtype);
    for (auto& o : n.outputs) {
      o.md = dnnl::memory::desc(to_dims(o.shape), dt, out_lay == Layout::nhwc ? t::nhwc : t::nchw);
      o.blocked = o.md != plain_md(o.dtype, o.shape);
    }
  }
  return std::make_unique<ShuffleChannelsKernel>(n, lay, out_lay, es);
}

OPFORGE_KERNEL(ShuffleChannels, make_shuffle_channels, check_shuffle_channels).layout_flexible();

}  // namespace opforge_cpu
