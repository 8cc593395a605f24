// 1x1 bf16 convolutions over pixel chunks that threads claim (chunk_pool.cpp), not oneDNN's split.
//
// Measured with single convolutions of RegNet/ResNet shapes (bf16, nhwc, batch 1, oneDNN 3.2 on
// AMX; docs/kernel-library.md "bf16 convolutions at 2 threads"): oneDNN's own 2-thread
// brgconv_1x1 ran 1.1-1.7x SLOWER than its 1-thread primitive, on this shared 2-vCPU host and on a
// quiet 16-core one pinned to two cores, while the same convolution as two 1-thread
// sub-primitives over halves of the pixels, claimed by the two threads, ran 1.1-1.9x faster than
// one thread from 14x14 up. A 1x1 convolution with unit strides is a matrix product over the
// pixels, so a chunk of pixels of a channels-last tensor is itself a dense [1, C, 1, n] tensor at
// an offset, with the same weights and post-ops (a residual read as a binary post-op is chunked
// the same way), and every output is the same sum as in the whole convolution.
#include "core/conv_pixel_split.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/env_switch.hpp"

namespace opforge_cpu {

namespace {

// Fewer pixels than this a thread (a 7x7 map at 2 threads) ran slower split than on one thread:
// brgconv's AMX tiles are 16 pixels tall and a short chunk leaves them partly empty.
constexpr int64_t kMinPixels = 64;

// How many chunks a thread: 2 (single convolutions of RegNet/ResNet shapes, a quiet and a loaded
// 2-vCPU run: 1 and 2 a thread within a few % of each other, 4 slower on 7x7-14x14 maps).
// OPFORGE_CPU_CONV_SPLIT_CHUNKS overrides it, for measuring.
int64_t chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_CONV_SPLIT_CHUNKS", 2));
  return value;
}

// OPFORGE_CPU_CONV_SPLIT=0: oneDNN's own split, for same-build A/B measurements.
bool split_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_CONV_SPLIT");
  return on;
}

// A convolution with oneDNN's eltwise_swish among its post-ops (SiLU: EfficientNet's, RexNet's
// and MobileViT's 1x1 expansions) keeps oneDNN's own 2-thread primitive. Stop 28, Intel Emerald
// Rapids VM with AMX (2 vCPUs), single 1x1 bf16 convolutions of those networks' shapes, split /
// unsplit at 2 threads, two runs (medians of 3 and 6 alternating processes): with a Swish the
// split lost in both runs on 22 of 29 shapes, 1.08-2.4x (38->228 at 56x56 0.79-0.82 vs 0.54 ms,
// 32->224 at 56x56 0.70-0.73 vs 0.42-0.45, 72->432 at 14x14 0.12-0.14 vs 0.05-0.07). Split it
// ran no faster than on one thread (38->228: 0.81), where oneDNN's own 2-thread primitive ran
// at 0.66x of one thread. It won in both runs on 4, all with 112+ input channels (112->672,
// 160->960, 320->320 at 14x14, 144->144 at 28x28: 0.59-0.98), but 128->512 and 128->768 at 14x14
// lost (1.23-1.26), so no channel threshold. The same shapes with ReLU, Clip, Sigmoid, Tanh or
// HardSwish, and the residual sums, split at 0.4-1.0x of unsplit (72->432 at 14x14 Sigmoid 0.92,
// Tanh 0.76; 38->228 at 56x56 ReLU 0.84-0.95, Sigmoid 0.85), so the rule is Swish's, not every
// transcendental post-op's. On Sapphire Rapids (stop 14) efficientnet_b0 ran 0.95x with the
// split; not measured there since. OPFORGE_CPU_CONV_SPLIT_SWISH=0 splits these too (stop 27's
// rule), for same-build A/B measurements.
bool keep_swish_whole() {
  static const bool on = env_switch_on("OPFORGE_CPU_CONV_SPLIT_SWISH");
  return on;
}

bool has_swish(const dnnl::convolution_forward::primitive_desc& pd) {
  const auto po = pd.get_primitive_attr().get_post_ops();
  for (int i = 0; i < po.len(); ++i) {
    if (po.kind(i) != dnnl::primitive::kind::eltwise) continue;
    dnnl::algorithm alg;
    float alpha, beta;
    po.get_params_eltwise(i, alg, alpha, beta);
    if (alg == dnnl::algorithm::eltwise_swish) return true;
  }
  return false;
}

bool dense_nhwc(const dnnl::memory::desc& md) {
  if (md.get_ndims() != 4 || md.get_inner_nblks() != 0) return false;
  return md == dnnl::memory::desc(md.get_dims(), md.get_data_type(), dnnl::memory::format_tag::acdb);
}

dnnl::memory::desc pixels_md(const dnnl::memory::desc& whole, int64_t pixels) {
  const auto dims = whole.get_dims();
  return dnnl::memory::desc({1, dims[1], 1, pixels}, whole.get_data_type(), dnnl::memory::format_tag::acdb);
}

}  // namespace

std::optional<ChunkSplit> plan_pixel_split(const dnnl::convolution_forward::primitive_desc& pd,
                                           const dnnl::memory::desc& residual, int threads,
                                           const PixelConvMaker& make) {
  if (threads <= 1 || !split_enabled() || !chunk_splits_on_this_host()) return std::nullopt;
  const auto src = pd.src_desc(), dst = pd.dst_desc(), wei = pd.weights_desc();
  if (src.get_data_type() != dnnl::memory::data_type::bf16 || wei.get_ndims() != 4) return std::nullopt;
  const auto wd = wei.get_dims();
  if (wd[2] != 1 || wd[3] != 1) return std::nullopt;
  const auto sd = src.get_dims(), dd = dst.get_dims();
  // unit strides and no padding: the output has the source's pixels
  if (sd[0] != dd[0] || sd[2] != dd[2] || sd[3] != dd[3]) return std::nullopt;
  if (pd.get_strides() != dnnl::memory::dims{1, 1}) return std::nullopt;
  if (pd.get_padding_l() != dnnl::memory::dims{0, 0} || pd.get_padding_r() != dnnl::memory::dims{0, 0}) return std::nullopt;
  if (!dense_nhwc(src) || !dense_nhwc(dst)) return std::nullopt;
  const bool has_residual = residual.get_ndims() != 0;
  if (has_residual && (!dense_nhwc(residual) || residual.get_dims() != dd)) return std::nullopt;
  if (keep_swish_whole() && has_swish(pd)) return std::nullopt;
  const int64_t pixels = sd[0] * sd[2] * sd[3];
  if (pixels < kMinPixels * threads) return std::nullopt;
  // chunks_per_thread() chunks a thread (fewer when a chunk would get under kMinPixels), rounded
  // up to whole AMX tiles of 16 pixels: more chunks than threads let a thread that lost its vCPU
  // for a while hold up the step by one small chunk only. When brgconv wants another weights
  // layout for chunks that short (64->96 channels at 64 pixels), one chunk a thread.
  const int64_t most = std::max<int64_t>(threads, std::min<int64_t>(int64_t{threads} * chunks_per_thread(), pixels / kMinPixels));
  const auto channels = static_cast<size_t>(dd[1]);
  const size_t src_pixel_bytes = dnnl::memory::data_type_size(src.get_data_type()) * static_cast<size_t>(sd[1]);
  const size_t dst_pixel_bytes = dnnl::memory::data_type_size(dst.get_data_type()) * channels;
  const size_t residual_pixel_bytes = has_residual ? dnnl::memory::data_type_size(residual.get_data_type()) * channels : 0;
  return split_units(
      pixels, threads, most, src_pixel_bytes, dst_pixel_bytes, residual_pixel_bytes, wei,
      [&](int64_t n) {
        return ChunkDescs{pixels_md(src, n), pixels_md(dst, n), has_residual ? pixels_md(residual, n) : dnnl::memory::desc()};
      },
      [&](const ChunkDescs& d) -> dnnl::primitive_desc { return make(d.src, wei, d.dst, d.residual); });
}

}  // namespace opforge_cpu
