// Concat. Plain inputs: for each outer index, one memcpy per input of its slab along the axis.
// bf16 inputs in one layout (a bf16 program's Inception/Dense/Fire block) give a bf16 output in
// that layout: half the bytes, and no f32 round trip between the block's convolutions.
// Layout-flexible: when a convolution wrote an input in oneDNN's layout (nhwc, nChw16c), oneDNN's
// concat reads it there and writes the output in that layout too (when every reader takes a
// blocked tensor), so the next convolution or pooling reads it as it is. Before, each blocked
// input was reordered to plain by the planner, copied, and reordered back by the convolution that
// read the result: three passes over the data of every Inception/Fire module instead of one.
// Channels-last inputs joined along the channels run our own copy (ChannelsLastConcat) on
// AVX-512 hosts: oneDNN 3.2's simple concat copies each input's few channels a pixel through a
// generic element loop.
#include <immintrin.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/binary_blocked.hpp"
#include "core/chunk_pool.hpp"
#include "core/dnnl_util.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const NodeDesc& n) {
    const Shape& ys = n.outputs[0].shape;
    int64_t axis = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(ys.size()));
    outer_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= ys[i];
    size_t es = dtype_size(n.outputs[0].dtype);
    for (const auto& in : n.inputs) {
      int64_t inner = 1;
      for (size_t i = axis; i < in.info.shape.size(); ++i) inner *= in.info.shape[i];
      chunk_.push_back(static_cast<size_t>(inner) * es);
    }
    row_ = 0;
    for (auto c : chunk_) row_ += c;
  }
  std::string impl_name() const override { return "memcpy"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    char* y = static_cast<char*>(out[0].data);
    parallel_range(outer_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        size_t off = o * row_;
        for (size_t i = 0; i < chunk_.size(); ++i) {
          if (chunk_[i]) std::memcpy(y + off, static_cast<const char*>(in[i].data) + o * chunk_[i], chunk_[i]);
          off += chunk_[i];
        }
      }
    }, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(row_, 1))));
  }

 private:
  int64_t outer_ = 1;
  std::vector<size_t> chunk_;
  size_t row_ = 0;
};

// oneDNN's concat of inputs that all share one blocked layout, written in that layout. Empty
// inputs add nothing and oneDNN refuses zero-sized sources, so they are left out of the primitive.
// `made()` is false when oneDNN has only its reference implementation for them (a channel block
// that does not divide an input's offset): the caller then takes the plain path.
class DnnlConcatKernel : public DnnlKernel {
 public:
  DnnlConcatKernel(NodeDesc& n, int axis) {
    std::vector<dnnl::memory::desc> srcs;
    std::vector<int> index;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (numel(n.in(static_cast<int>(i)).shape) == 0) continue;
      srcs.push_back(md_of(n.in(static_cast<int>(i))));
      index.push_back(static_cast<int>(i));
    }
    const TensorInfo& y = n.outputs[0];
    dnnl::concat::primitive_desc pd;
    try {
      pd = dnnl::concat::primitive_desc(cpu_engine(), dst_like(srcs.at(0), y, n.attrs.b("bf16_output", false)), axis,
                                        srcs, default_attr());
    } catch (const dnnl::error&) {
      return;
    }
    const char* impl = pd.impl_info_str();
    if (impl == nullptr || std::string(impl).rfind("ref", 0) == 0) return;
    set_primitive(dnnl::concat(pd), pd);
    for (size_t i = 0; i < srcs.size(); ++i) arg_input(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), index[i], srcs[i]);
    const auto dst = pd.dst_desc();
    arg_output(DNNL_ARG_DST, 0, dst);
    n.outputs[0].md = dst;
    n.outputs[0].blocked = dst != plain_md(y.dtype, y.shape);
    made_ = true;
  }
  bool made() const { return made_; }

 private:
  bool made_ = false;

  // A descriptor of the output's dims in the layout of `src` (same dimension order and inner
  // blocks; dense strides recomputed for the output's sizes).
  static dnnl::memory::desc dst_like(const dnnl::memory::desc& src, const TensorInfo& y, bool bf16_output) {
    const auto dims = to_dims(y.shape);
    const int nd = static_cast<int>(dims.size());
    const auto sstr = src.get_strides();
    const auto blks = src.get_inner_blks();
    const auto idxs = src.get_inner_idxs();
    if (static_cast<int>(sstr.size()) != nd) throw dnnl::error(dnnl_invalid_arguments, "rank");
    // outer (blocked-over) sizes of each dim, and the inner block's element count
    dnnl::memory::dims outer(dims), block_of(nd, 1);
    int64_t inner = 1;
    for (size_t b = 0; b < blks.size(); ++b) {
      block_of[idxs[b]] *= blks[b];
      inner *= blks[b];
    }
    for (int d = 0; d < nd; ++d) outer[d] = (dims[d] + block_of[d] - 1) / block_of[d];
    // dims ordered by the source's strides, outermost first (ties: the lower dim first)
    std::vector<int> order(nd);
    for (int d = 0; d < nd; ++d) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sstr[a] > sstr[b]; });
    dnnl::memory::dims strides(nd);
    int64_t s = inner;
    for (int k = nd - 1; k >= 0; --k) {
      strides[order[k]] = s;
      s *= outer[order[k]];
    }
    // (bf16 for bf16 inputs, the convolution outputs of a bf16 program, where the emitter found
    // every reader takes the concatenation in bf16 too, "bf16_output": emit.py _bf16_storable;
    // else the output's own type: oneDNN then finds only its reference concat, and the plain
    // path below converts)
    const bool bf16 = bf16_output && src.get_data_type() == dnnl::memory::data_type::bf16;
    const auto dt = bf16 ? dnnl::memory::data_type::bf16 : dnnl_type(y.dtype);
    if (blks.empty()) return dnnl::memory::desc(dims, dt, strides);
    // Rebuild with the inner blocks: the C API's blocking descriptor through a format tag is not
    // reachable generically, so only the layouts oneDNN's convolutions choose are rebuilt here.
    using t = dnnl::memory::format_tag;
    if (nd == 4 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 16) return dnnl::memory::desc(dims, dt, t::aBcd16b);
    if (nd == 4 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 8) return dnnl::memory::desc(dims, dt, t::aBcd8b);
    if (nd == 5 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 16) return dnnl::memory::desc(dims, dt, t::aBcde16b);
    if (nd == 5 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 8) return dnnl::memory::desc(dims, dt, t::aBcde8b);
    if (nd == 3 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 16) return dnnl::memory::desc(dims, dt, t::aBc16b);
    if (nd == 3 && blks.size() == 1 && idxs[0] == 1 && blks[0] == 8) return dnnl::memory::desc(dims, dt, t::aBc8b);
    throw dnnl::error(dnnl_unimplemented, "layout");
  }
};
}  // namespace

namespace {
// n bytes from s to d: whole zmm, then one masked zmm (a channels-last pixel's channels of one
// input: 32 bytes for UNet's 16 bf16 channels, 64 for DenseNet's 32 growth channels).
__attribute__((target("avx512f,avx512bw,bmi2"))) inline void copy_pixel(char* d, const char* s, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
  if (i < n) {
    const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(n - i));
    _mm512_mask_storeu_epi8(d + i, m, _mm512_maskz_loadu_epi8(m, s + i));
  }
}

// Channels-last (nhwc, dense) inputs of one element type joined along the channels into a
// channels-last output of that type: pixel by pixel, each input's channels copied in turn, so
// the output is written in order. oneDNN 3.2's simple:any concat of the same tensors (C++
// micro-benchmark, one process, alternating, bf16, under chrt, ours/oneDNN at 1 / 2 threads):
// UNet's 16+16 channels at 256x256 0.52 / 0.38, 32+32 at 128x128 0.51 / 0.45, 64+64 at 64x64
// 0.80 / 0.56, 128+128 at 32x32 0.93 / 0.84, DenseNet's 64+32 at 56x56 0.60 / 0.50, 128+32 at
// 28x28 0.61 / 0.47, 512+32 at 14x14 0.98 / 0.83. (Input by input instead, the output written
// with a stride, lost at 128 bytes a pixel and more: 1.12-1.17.) OPFORGE_CPU_NHWC_CONCAT=0:
// oneDNN's concat instead, for same-build A/B measurements.
class ChannelsLastConcat : public Kernel {
 public:
  ChannelsLastConcat(const Shape& ys, std::vector<int64_t> bytes) : bytes_(std::move(bytes)) {
    pixels_ = ys[0];
    for (size_t i = 2; i < ys.size(); ++i) pixels_ *= ys[i];
    for (int64_t b : bytes_) row_ += b;
  }
  std::string impl_name() const override { return "concat_nhwc:avx512"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    char* y = static_cast<char*>(out[0].data);
    // a few chunks a thread, claimed from a counter: a thread that runs slow takes fewer
    const int threads = ctx.num_threads;
    const int chunks = threads > 1 ? static_cast<int>(std::min<int64_t>(pixels_, 4 * threads)) : 1;
    run_chunks(chunks, threads, [&](int c, int) {
      const int64_t p0 = pixels_ * c / chunks, p1 = pixels_ * (c + 1) / chunks;
      for (int64_t p = p0; p < p1; ++p) {
        char* yp = y + p * row_;
        for (size_t i = 0; i < bytes_.size(); ++i) {
          if (bytes_[i] == 0) continue;  // (an empty input)
          copy_pixel(yp, static_cast<const char*>(in[i].data) + p * bytes_[i], bytes_[i]);
          yp += bytes_[i];
        }
      }
    }, /*runs_primitives=*/false);
  }

 private:
  std::vector<int64_t> bytes_;  // each input's channels of one pixel, in bytes
  int64_t pixels_ = 0, row_ = 0;
};

// The dense channels-last layout (nwc, nhwc, ndhwc) of `dims`, or an empty descriptor.
dnnl::memory::desc channels_last(const dnnl::memory::dims& dims, dnnl::memory::data_type dt) {
  using t = dnnl::memory::format_tag;
  switch (dims.size()) {
    case 3: return dnnl::memory::desc(dims, dt, t::acb);
    case 4: return dnnl::memory::desc(dims, dt, t::acdb);
    case 5: return dnnl::memory::desc(dims, dt, t::acdeb);
    default: return {};
  }
}

bool avx512_host() { return host_has_avx512(); }

// ChannelsLastConcat for Concat `n` along `axis` when every non-empty input is dense
// channels-last of one type and the output may stay in that layout (`blocked_out`); the
// output's descriptor is set. nullptr otherwise.
std::unique_ptr<Kernel> make_channels_last_concat(NodeDesc& n, int64_t axis, bool blocked_out) {
  static const bool enabled = env_switch_on("OPFORGE_CPU_NHWC_CONCAT");  // =0: off, for A/B runs
  const TensorInfo& y = n.outputs[0];
  if (!enabled || axis != 1 || !blocked_out || numel(y.shape) == 0 || !avx512_host()) return nullptr;
  std::optional<dnnl::memory::data_type> dt;
  std::vector<int64_t> bytes;
  for (const auto& in : n.inputs) {
    if (numel(in.info.shape) == 0) {
      bytes.push_back(0);
      continue;
    }
    const auto& md = in.info.md;
    if (!in.info.blocked || (dt && md.get_data_type() != *dt)) return nullptr;
    dt = md.get_data_type();
    const auto want = channels_last(to_dims(in.info.shape), *dt);
    if (want.get_ndims() == 0 || md != want) return nullptr;
    bytes.push_back(in.info.shape[1] * static_cast<int64_t>(dnnl::memory::data_type_size(*dt)));
  }
  // the output's type: the inputs' when that is the node's, or bf16 inputs kept in bf16 where
  // every reader takes bf16 ("bf16_output", as DnnlConcatKernel's dst_like)
  if (!dt) return nullptr;
  const bool bf16 = *dt == dnnl::memory::data_type::bf16 && n.attrs.b("bf16_output", false);
  if (!bf16 && *dt != dnnl_type(y.dtype)) return nullptr;
  const auto dst = channels_last(to_dims(y.shape), *dt);
  n.outputs[0].md = dst;
  n.outputs[0].blocked = dst != plain_md(y.dtype, y.shape);
  return std::make_unique<ChannelsLastConcat>(y.shape, std::move(bytes));
}

// The two descriptors order their dimensions alike (by stride, outermost first).
bool same_order(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  const auto sa = a.get_strides(), sb = b.get_strides();
  if (sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i)
    for (size_t j = 0; j < sa.size(); ++j)
      if ((sa[i] > sa[j]) != (sb[i] > sb[j])) return false;
  return true;
}
}  // namespace

std::string check_concat(const NodeDesc& n) {
  bool blocked = false;
  for (const auto& in : n.inputs) blocked = blocked || in.info.blocked;
  for (const auto& in : n.inputs)
    if (blocked && in.info.dtype != n.outputs[0].dtype)
      return std::string("inputs of different element types (") + dtype_name(in.info.dtype) + ", " +
             dtype_name(n.outputs[0].dtype) + ")";
  return "";
}

std::unique_ptr<Kernel> make_concat(NodeDesc& n) {
  const Shape& ys = n.outputs[0].shape;
  int64_t axis = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(ys.size()));
  bool blocked = false, same = true;
  const dnnl::memory::desc* first = nullptr;
  for (const auto& in : n.inputs) {
    blocked = blocked || in.info.blocked;
    if (numel(in.info.shape) == 0) continue;
    // one layout for all: the same descriptor up to the size along the axis
    if (!in.info.blocked) same = false;
    else if (!first) first = &in.info.md;
    else same = same && first->get_inner_blks() == in.info.md.get_inner_blks() &&
                first->get_inner_idxs() == in.info.md.get_inner_idxs() &&
                first->get_data_type() == in.info.md.get_data_type() && same_order(*first, in.info.md);
  }
  if (!blocked) return std::make_unique<ConcatKernel>(n);
  const bool blocked_out = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
  if (auto k = make_channels_last_concat(n, axis, blocked_out)) return k;
  if (same && first && blocked_out && numel(ys) > 0) {
    auto k = std::make_unique<DnnlConcatKernel>(n, static_cast<int>(axis));
    if (k->made()) return k;
  }
  // Mixed layouts, a plain reader, or a layout oneDNN concatenates only with its reference
  // implementation (0.15 ms for each of DenseNet's 58 concats, 2x the path here): each blocked
  // input is reordered to plain (a dense JIT reorder into scratch), then the memcpy kernel.
  return make_plain_inputs_kernel(n, [](NodeDesc& p) -> std::unique_ptr<Kernel> { return std::make_unique<ConcatKernel>(p); });
}

OPFORGE_KERNEL(Concat, make_concat, check_concat).layout_flexible();

}  // namespace opforge_cpu
