// A bf16 convolution (3x3, grouped, strided) at 2+ threads run as output-row chunks on the chunk
// pool (conv_row_split.cpp): only with OPFORGE_CPU_CONV_ROWS=1 (or dw), measured and not enabled.
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace opforge_cpu {

struct ConvRowSplit {
  struct Chunk {
    int prim;            // index into prims
    int64_t src_at;      // first source element of the chunk (channels-last, element offset)
    int64_t dst_at;      // first destination (and residual) element
  };
  std::vector<dnnl::convolution_forward> prims;        // created for one thread each
  std::vector<dnnl::memory::desc> src, dst, residual;  // per prim: [1, C, rows, W] channels-last
  std::vector<Chunk> chunks;
  int threads = 1;
  size_t slot_scratch = 0;  // scratchpad bytes a thread needs (64-aligned)
  size_t src_elem_bytes = 0, dst_elem_bytes = 0, residual_elem_bytes = 0;
};

// Builds the sub-convolution of one chunk: (src, weights, dst, residual or a zero desc, pads
// begin, pads end); strides and dilations are the whole convolution's.
using ConvRowMaker = std::function<dnnl::convolution_forward::primitive_desc(
    const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&,
    const dnnl::memory::dims&, const dnnl::memory::dims&)>;

// The split of a convolution `pd` (already chosen, bf16) when it is asked for and qualifies: a
// 2D convolution (depthwise ones only with OPFORGE_CPU_CONV_ROWS=dw) whose source, destination (and residual, if
// any) are dense channels-last, enough work for `threads` threads, and for each chunk shape a
// sub-primitive of the same implementation that takes the same packed weights.
std::optional<ConvRowSplit> plan_conv_row_split(const dnnl::convolution_forward::primitive_desc& pd,
                                       const dnnl::memory::desc& residual, int threads, const ConvRowMaker& make);

// A split's arguments over one program state's buffers, as PixelSplitArgs.
struct ConvRowSplitArgs {
  std::vector<dnnl::stream> streams;
  std::vector<std::vector<std::unordered_map<int, dnnl::memory>>> args;  // [slot][chunk]
};

// `whole`: the unsplit primitive's arguments; `residual_arg` its residual's argument key, or 0;
// `scratch`: threads x slot_scratch bytes.
ConvRowSplitArgs bind_conv_row_split(const ConvRowSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                            int residual_arg, char* scratch);

// Runs every chunk on up to `threads` threads (run_chunks).
void run_conv_row_split(const ConvRowSplit& split, ConvRowSplitArgs& args, int threads);

}  // namespace opforge_cpu
