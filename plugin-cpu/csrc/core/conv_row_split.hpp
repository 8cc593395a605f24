// A bf16 convolution (3x3, grouped, strided) at 2+ threads run as output-row chunks on the chunk
// pool (conv_row_split.cpp): only with OPFORGE_CPU_CONV_ROWS=1 (or dw), measured and not enabled.
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <optional>

#include "core/chunk_split.hpp"

namespace opforge_cpu {

// Builds the sub-convolution of one chunk: (src, weights, dst, residual or a zero desc, pads
// begin, pads end); strides and dilations are the whole convolution's.
using ConvRowMaker = std::function<dnnl::convolution_forward::primitive_desc(
    const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&,
    const dnnl::memory::dims&, const dnnl::memory::dims&)>;

// The split of a convolution `pd` (already chosen, bf16) when it is asked for and qualifies: a
// 2D convolution (depthwise ones only with OPFORGE_CPU_CONV_ROWS=dw) whose source, destination (and residual, if
// any) are dense channels-last, enough work for `threads` threads, and for each chunk shape a
// sub-primitive of the same implementation that takes the same packed weights. Its chunks are
// bands of output rows of one image, each sub-primitive's descs [1, C, rows, W] channels-last; it
// runs with bind_chunk_split / run_chunk_split (chunk_split.hpp).
std::optional<ChunkSplit> plan_conv_row_split(const dnnl::convolution_forward::primitive_desc& pd,
                                              const dnnl::memory::desc& residual, int threads, const ConvRowMaker& make);

}  // namespace opforge_cpu
