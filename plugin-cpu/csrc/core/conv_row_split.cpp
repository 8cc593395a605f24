// bf16 convolutions (3x3, grouped, strided, depthwise) over output-row chunks that threads claim
// (chunk_pool.cpp) instead of oneDNN's split: built, tested, and OFF unless OPFORGE_CPU_CONV_ROWS
// asks for it, because it did not pay in the models (docs/kernel-library.md "Row chunks of bf16
// convolutions at 2 threads (stop 15, measured, not enabled)").
//
// A block of output rows of a channels-last image reads a contiguous band of input rows; it is
// itself a convolution over that band, whose padding is the whole one's where the band touches the
// image's top or bottom edge and none elsewhere, with the same weights and post-ops (a residual
// read as a binary post-op is cut the same way as the destination). oneDNN 3.2 gives such a
// sub-convolution the whole one's weights layout and implementation for ResNet's, RegNet's and
// MobileNet's shapes (each chunk is checked: else no split). Every output is the same sum of the
// same products as in the whole convolution: bit-identical.
//
// In single-convolution C++ timings oneDNN's own 2-thread primitive looked no faster than one
// thread and the chunks 0.55-0.92 of it; inside the models (2 threads, chrt, alternating
// processes) oneDNN's split scaled after all (resnet18's convolutions 14.2 -> 7.4 ms), and the
// chunks were 0.80-0.98 of it on resnet18 under chrt but 0.98-1.17 at load 5 without it,
// tv_regnet_y_800mf 1.01-1.07, MobileNetV2's depthwise ones level on 112x112/56x56 maps and ~1.4x
// slower on 14x14/7x7.
#include "core/conv_row_split.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "core/env_switch.hpp"
#include "core/threading.hpp"

namespace opforge_cpu {

namespace {

// Less output than this a thread (elements, channels x pixels) stays with oneDNN: the region's
// wake-up would cost more than the half it saves.
constexpr int64_t kMinElements = 8192;

// Row chunks a thread: 2 (a thread that lost its vCPU for a while holds the step up by one small
// chunk only; single convolutions, 4 chunks for 2 threads). OPFORGE_CPU_CONV_ROWS_CHUNKS
// overrides it, for measuring.
int64_t chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_CONV_ROWS_CHUNKS", 2));
  return value;
}

// OPFORGE_CPU_CONV_ROWS (read once): unset or 0 off, 1 on for all but depthwise convolutions, dw
// on for depthwise ones too.
std::string rows_mode() {
  // (default off, unlike the other switches: any other value, unset included, is "0")
  static const std::string mode = [] {
    const std::string m = env_string("OPFORGE_CPU_CONV_ROWS", "0");
    return m == "1" || m == "dw" ? m : std::string("0");
  }();
  return mode;
}

bool dense_nhwc(const dnnl::memory::desc& md) {
  if (md.get_ndims() != 4 || md.get_inner_nblks() != 0) return false;
  return md == dnnl::memory::desc(md.get_dims(), md.get_data_type(), dnnl::memory::format_tag::acdb);
}

dnnl::memory::desc rows_md(const dnnl::memory::desc& whole, int64_t rows) {
  const auto d = whole.get_dims();
  return dnnl::memory::desc({1, d[1], rows, d[3]}, whole.get_data_type(), dnnl::memory::format_tag::acdb);
}

}  // namespace

std::optional<ChunkSplit> plan_conv_row_split(const dnnl::convolution_forward::primitive_desc& pd,
                                              const dnnl::memory::desc& residual, int threads, const ConvRowMaker& make) {
  if (threads <= 1 || rows_mode() == "0") return std::nullopt;
  const auto src = pd.src_desc(), dst = pd.dst_desc(), wei = pd.weights_desc();
  if (src.get_data_type() != dnnl::memory::data_type::bf16) return std::nullopt;
  // weights [O, I, kh, kw] or grouped [G, O/G, I/G, kh, kw]; depthwise only on request
  const int wn = wei.get_ndims();
  if (wn != 4 && wn != 5) return std::nullopt;
  const auto wd = wei.get_dims();
  if (wn == 5 && wd[1] == 1 && wd[2] == 1 && rows_mode() != "dw") return std::nullopt;
  if (!dense_nhwc(src) || !dense_nhwc(dst)) return std::nullopt;
  const auto sd = src.get_dims(), dd = dst.get_dims();
  const bool has_residual = residual.get_ndims() != 0;
  if (has_residual && (!dense_nhwc(residual) || residual.get_dims() != dd)) return std::nullopt;
  const int64_t batch = sd[0], ih = sd[2], iw = sd[3], cin = sd[1], cout = dd[1], oh = dd[2], ow = dd[3];
  if (batch * oh * ow * cout < kMinElements * threads) return std::nullopt;
  const auto strides = pd.get_strides(), dil = pd.get_dilations();
  const auto pl = pd.get_padding_l(), pr = pd.get_padding_r();
  const int64_t sh = strides[0], ext = (wd[wn - 2] - 1) * (dil[0] + 1) + 1;
  const std::string whole_impl = pd.impl_info_str() ? pd.impl_info_str() : "";

  // chunks of each image: enough for chunks_per_thread() a thread over the batch, whole rows
  const int64_t want = int64_t{threads} * chunks_per_thread();
  const int64_t per_image = std::min(oh, std::max<int64_t>(1, (want + batch - 1) / batch));
  if (batch * per_image < 2) return std::nullopt;

  ChunkSplit split;
  const size_t src_elem_bytes = dnnl::memory::data_type_size(src.get_data_type());
  const size_t dst_elem_bytes = dnnl::memory::data_type_size(dst.get_data_type());
  const size_t residual_elem_bytes = has_residual ? dnnl::memory::data_type_size(residual.get_data_type()) : 0;
  // the chunks read the whole convolution's packed weights with its kernel: else no split
  const auto same_kernel = [&](const std::string& impl) { return impl == whole_impl; };
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int> made;  // (in rows, out rows, top, bottom) -> prim
  // sub-primitives for one thread (a primitive created for more would fork inside the chunk pool)
  const bool ok = with_threads(1, [&]() -> bool {
   try {
    for (int64_t i = 0; i < per_image; ++i) {
      const int64_t r0 = oh * i / per_image, r1 = oh * (i + 1) / per_image;
      // the input band these output rows read, clipped to the image: what it loses at the top or
      // bottom is that chunk's padding (the whole convolution's there, none inside)
      int64_t in0 = r0 * sh - pl[0], in1 = (r1 - 1) * sh - pl[0] + ext;
      const int64_t top = std::max<int64_t>(0, -in0), bottom = std::max<int64_t>(0, in1 - ih);
      in0 = std::max<int64_t>(0, in0);
      in1 = std::min(ih, in1);
      const auto key = std::make_tuple(in1 - in0, r1 - r0, top, bottom);
      auto at = made.find(key);
      if (at == made.end()) {
        const ChunkDescs d{rows_md(src, in1 - in0), rows_md(dst, r1 - r0),
                           has_residual ? rows_md(residual, r1 - r0) : dnnl::memory::desc()};
        const int prim = add_chunk_primitive(split, make(d.src, wei, d.dst, d.residual, {top, pl[1]}, {bottom, pr[1]}),
                                             d, wei, same_kernel);
        if (prim < 0) return false;
        at = made.emplace(key, prim).first;
      }
      for (int64_t n = 0; n < batch; ++n) {
        // channels-last element offsets: the band's first input row, the chunk's first output row
        const auto src_elem = static_cast<size_t>(((n * ih + in0) * iw) * cin);
        const auto dst_elem = static_cast<size_t>(((n * oh + r0) * ow) * cout);
        split.chunks.push_back(
            {at->second, src_elem * src_elem_bytes, dst_elem * dst_elem_bytes, dst_elem * residual_elem_bytes});
      }
    }
   } catch (const dnnl::error&) {
    return false;  // no such sub-primitive: oneDNN's own split
   }
   return true;
  });
  if (!ok) return std::nullopt;
  // image by image, top to bottom (neighbouring chunks share input rows in cache)
  std::stable_sort(split.chunks.begin(), split.chunks.end(),
                   [](const ChunkSplit::Chunk& a, const ChunkSplit::Chunk& b) { return a.dst_at < b.dst_at; });
  split.threads = threads;
  return split;
}

}  // namespace opforge_cpu
