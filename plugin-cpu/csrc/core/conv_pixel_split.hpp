// A 1x1 bf16 convolution at 2+ threads run as pixel chunks on the chunk pool (conv_pixel_split.cpp).
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <optional>

#include "core/chunk_split.hpp"

namespace opforge_cpu {

// Builds the sub-primitive of `pixels` pixels: (src, weights, dst, residual or a zero desc).
using PixelConvMaker = std::function<dnnl::convolution_forward::primitive_desc(
    const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&)>;

// The split of a convolution `pd` (already chosen, bf16) when it qualifies: a 1x1 kernel with
// unit strides and no padding whose source, destination (and residual, if any) are dense
// channels-last, no Swish among its post-ops (conv_pixel_split.cpp), at least kMinPixels pixels
// a thread, and a brgconv sub-primitive for each chunk size that takes the same packed weights.
// `threads` is the step's thread count. Its chunks are runs of pixels (of N*H*W, channels-last),
// each sub-primitive's descs [1, C, 1, pixels]; it runs with bind_chunk_split / run_chunk_split
// (chunk_split.hpp).
std::optional<ChunkSplit> plan_pixel_split(const dnnl::convolution_forward::primitive_desc& pd,
                                           const dnnl::memory::desc& residual, int threads,
                                           const PixelConvMaker& make);

}  // namespace opforge_cpu
