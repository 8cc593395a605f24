// A 1x1 bf16 convolution at 2+ threads run as pixel chunks on the chunk pool (conv_pixel_split.cpp).
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace opforge_cpu {

struct PixelSplit {
  struct Chunk {
    int prim;        // index into prims
    int64_t first;   // first pixel (of N*H*W, channels-last)
    int64_t pixels;  // how many
  };
  // created for one thread each: 1x1 convolutions here, MatMuls over rows (matmul_row_split.hpp,
  // where a "pixel" is a row of the [M, K] source and the [M, N] destination)
  std::vector<dnnl::primitive> prims;
  std::vector<dnnl::memory::desc> src, dst, residual;  // per prim: [1, C, 1, pixels] channels-last
  std::vector<Chunk> chunks;
  int threads = 1;
  size_t slot_scratch = 0;  // scratchpad bytes a thread needs (64-aligned)
  size_t src_pixel_bytes = 0, dst_pixel_bytes = 0, residual_pixel_bytes = 0;
};

// Builds the sub-primitive of `pixels` pixels: (src, weights, dst, residual or a zero desc).
using PixelConvMaker = std::function<dnnl::convolution_forward::primitive_desc(
    const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&)>;

// The split of a convolution `pd` (already chosen, bf16) when it qualifies: a 1x1 kernel with
// unit strides and no padding whose source, destination (and residual, if any) are dense
// channels-last, at least kMinPixels pixels a thread, and a brgconv sub-primitive for each chunk
// size that takes the same packed weights. `threads` is the step's thread count.
std::optional<PixelSplit> plan_pixel_split(const dnnl::convolution_forward::primitive_desc& pd,
                                           const dnnl::memory::desc& residual, int threads,
                                           const PixelConvMaker& make);

// A split's arguments over one program state's buffers: per thread slot, one stream and each
// chunk's arguments (its source, destination and residual at the chunk's first pixel, the
// slot's scratchpad, the shared weights and bias).
struct PixelSplitArgs {
  std::vector<dnnl::stream> streams;
  std::vector<std::vector<std::unordered_map<int, dnnl::memory>>> args;  // [slot][chunk]
};

// `whole`: the unsplit primitive's arguments; `residual_arg` its residual's argument key, or 0;
// `scratch`: threads x slot_scratch bytes.
PixelSplitArgs bind_pixel_split(const PixelSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                                int residual_arg, char* scratch);

// Runs every chunk on up to `threads` threads (run_chunks).
void run_pixel_split(const PixelSplit& split, PixelSplitArgs& args, int threads);

}  // namespace opforge_cpu
