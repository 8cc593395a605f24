// ChannelSlice (internal; emit.py emit_index_map): y = x[:, begin:begin + C_out] of a 4-D
// tensor, a Slice/StridedSlice of consecutive channels with constant bounds. RexNet's
// partial-channel residual, Concat(Slice(x, :C) + s, Slice(x, C:)), slices a 1x1 convolution's
// channels-last output: as an IndexMap (plain data only) each Slice reordered x to plain first,
// and the Add and Concat after it ran on plain tensors, so the next convolution reordered its
// source back (22 Reorders 0.19 ms of timm_rexnet_100's ~4.4 in bf16 at one thread). Here a
// channels-last source is sliced pixel by pixel into a channels-last output when every reader
// takes that layout; a plain source is copied as one run per image; any other layout is
// reordered to plain first. Exact: elements are copied, never converted.
#include <algorithm>
#include <cstring>

#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {

// Plain NCHW: image n's channels [begin, begin + C_out) are one run of C_out * H * W elements.
class PlainChannelSlice : public Kernel {
 public:
  explicit PlainChannelSlice(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ys = n.outputs[0].shape;
    const size_t es = dtype_size(n.outputs[0].dtype);
    const int64_t plane = xs[2] * xs[3];
    images_ = xs[0];
    src_ = static_cast<size_t>(xs[1] * plane) * es;
    run_ = static_cast<size_t>(ys[1] * plane) * es;
    offset_ = static_cast<size_t>(n.attrs.i("begin") * plane) * es;
  }
  std::string impl_name() const override { return "channel_slice"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    if (run_ == 0) return;
    parallel_range(images_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) std::memcpy(y + i * run_, x + i * src_ + offset_, run_);
    }, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(run_, 1))));
  }

 private:
  int64_t images_ = 0;
  size_t src_ = 0, run_ = 0, offset_ = 0;
};

// Channels-last (nhwc, dense) source and output of one element type: each pixel's C_out
// channels copied from the source pixel's channel `begin` on.
class NhwcChannelSlice : public Kernel {
 public:
  NhwcChannelSlice(const NodeDesc& n, size_t es) {
    const Shape& xs = n.in(0).shape;
    const Shape& ys = n.outputs[0].shape;
    pixels_ = xs[0] * xs[2] * xs[3];
    src_ = static_cast<size_t>(xs[1]) * es;
    bytes_ = static_cast<size_t>(ys[1]) * es;
    offset_ = static_cast<size_t>(n.attrs.i("begin")) * es;
  }
  std::string impl_name() const override { return "channel_slice:nhwc"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data) + offset_;
    char* y = static_cast<char*>(out[0].data);
    if (bytes_ == 0) return;
    parallel_range(pixels_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) std::memcpy(y + p * bytes_, x + p * src_, bytes_);
    }, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(bytes_, 1))));
  }

 private:
  int64_t pixels_ = 0;
  size_t src_ = 0, bytes_ = 0, offset_ = 0;
};

std::unique_ptr<Kernel> make_plain_channel_slice(NodeDesc& n) { return std::make_unique<PlainChannelSlice>(n); }

}  // namespace

std::string check_channel_slice(const NodeDesc& n) {
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  const int64_t begin = n.attrs.i("begin", -1);
  if (xs.size() != 4 || ys.size() != 4) return "ChannelSlice takes 4-D tensors";
  if (xs[0] != ys[0] || xs[2] != ys[2] || xs[3] != ys[3]) return "ChannelSlice keeps N, H and W";
  if (begin < 0 || begin + ys[1] > xs[1]) return "ChannelSlice's channels lie outside its input";
  if (n.in(0).dtype != n.outputs[0].dtype) return "ChannelSlice keeps the element type";
  return "";
}

std::unique_ptr<Kernel> make_channel_slice(NodeDesc& n) {
  const TensorInfo& x = n.in(0);
  if (!x.blocked) return make_plain_channel_slice(n);
  // A channels-last source of the node's own element type (a bf16 source would need converting,
  // it goes the plain way), written channels-last where every reader takes that layout.
  const bool blocked_out = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
  const auto dt = x.md.get_data_type();
  const auto nhwc = dnnl::memory::format_tag::acdb;
  if (blocked_out && dnnl_supports(x.dtype) && dt == dnnl_type(x.dtype) && x.md == dnnl::memory::desc(to_dims(x.shape), dt, nhwc) &&
      numel(n.outputs[0].shape) > 0) {
    const auto dst = dnnl::memory::desc(to_dims(n.outputs[0].shape), dt, nhwc);
    n.outputs[0].md = dst;
    n.outputs[0].blocked = dst != plain_md(n.outputs[0].dtype, n.outputs[0].shape);
    return std::make_unique<NhwcChannelSlice>(n, dnnl::memory::data_type_size(dt));
  }
  return make_plain_inputs_kernel(n, make_plain_channel_slice);
}

OPFORGE_KERNEL(ChannelSlice, make_channel_slice, check_channel_slice).layout_flexible();

}  // namespace opforge_cpu
