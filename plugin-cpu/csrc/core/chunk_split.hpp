// A oneDNN primitive at 2+ threads run as chunks on one-thread sub-primitives that the threads
// claim (chunk_pool.cpp): what the 1x1 convolutions' pixel chunks (conv_pixel_split.cpp), the
// convolutions' output-row chunks (conv_row_split.cpp) and the MatMuls' row chunks
// (matmul_row_split.cpp) share, so that they plan, bind and run their chunks the same way
// (chunk_split.cpp).
#pragma once

#include <dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace opforge_cpu {

struct ChunkSplit {
  // Where a chunk's operands start in the whole primitive's buffers, in bytes: every operand of a
  // chunk is dense at that offset (a run of channels-last pixels or rows, a band of image rows).
  struct Chunk {
    int prim;            // index into prims
    size_t src_at;       // the chunk's source
    size_t dst_at;       // its destination
    size_t residual_at;  // its residual (a binary post-op's operand, read as the destination is); 0 without one
  };
  std::vector<dnnl::primitive> prims;                  // created for one thread each
  std::vector<dnnl::memory::desc> src, dst, residual;  // per prim: its chunks' descs (residual: a zero desc without one)
  std::vector<Chunk> chunks;
  int threads = 1;
  size_t slot_scratch = 0;  // scratchpad bytes a thread needs (64-aligned)
};

// The descs of one chunk shape: source, destination, residual (a zero desc without one).
struct ChunkDescs {
  dnnl::memory::desc src, dst, residual;
};

// Adds `sub`, the sub-primitive of the chunks of shape `descs`, to `split` and returns its index
// in prims; -1 when `impl_ok` rejects its implementation or it wants packed weights other than the
// whole primitive's `wei` (the chunks read the whole primitive's weights: no split then).
int add_chunk_primitive(ChunkSplit& split, const dnnl::primitive_desc& sub, const ChunkDescs& descs,
                        const dnnl::memory::desc& wei, const std::function<bool(const std::string& impl)>& impl_ok);

// The descs of a chunk of `units` leading units (pixels of a channels-last tensor, rows of a
// matrix), and the sub-primitive of such a chunk.
using UnitChunkDescs = std::function<ChunkDescs(int64_t units)>;
using UnitChunkMaker = std::function<dnnl::primitive_desc(const ChunkDescs&)>;

// Whether this host takes the bf16 pixel and MatMul row splits (conv_pixel_split.cpp,
// matmul_row_split.cpp): where oneDNN's effective ISA has AMX, the hosts they were measured and
// adopted on. On the AMD EPYC Zen 5 VM of stop 18 (AVX512_BF16, no AMX, GOMP_SPINCOUNT 10000)
// oneDNN's own 2-thread primitives were faster (docs/kernel-library.md "The bf16 splits on a host
// without AMX"). OPFORGE_CPU_SPLIT_HOST_RULE=0 (read once) takes them on every host, as before.
bool chunk_splits_on_this_host();

// The split of `units` leading units into `most` chunks rounded up to whole 16-unit AMX tiles (the
// last one shorter), with a brg* sub-primitive (brgconv, brgemm) for each distinct chunk size that
// takes the whole primitive's packed weights `wei`; when brg* wants another weights layout for
// chunks that short, one chunk a thread (`threads`: the step's thread count); none when neither
// has such sub-primitives or would make fewer than two chunks. `*_unit_bytes`: one unit's bytes in
// the source, destination and residual (0 without one).
std::optional<ChunkSplit> split_units(int64_t units, int threads, int64_t most, size_t src_unit_bytes,
                                      size_t dst_unit_bytes, size_t residual_unit_bytes, const dnnl::memory::desc& wei,
                                      const UnitChunkDescs& descs, const UnitChunkMaker& make);

// A split's arguments over one program state's buffers: per thread slot, one stream and each
// chunk's arguments (its source, destination and residual at the chunk's offsets, the slot's
// scratchpad, the shared weights and bias).
struct ChunkSplitArgs {
  std::vector<dnnl::stream> streams;
  std::vector<std::vector<std::unordered_map<int, dnnl::memory>>> args;  // [slot][chunk]
};

// `whole`: the unsplit primitive's arguments; `residual_arg` its residual's argument key, or 0;
// `scratch`: threads x slot_scratch bytes.
ChunkSplitArgs bind_chunk_split(const ChunkSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                                int residual_arg, char* scratch);

// Runs every chunk on up to `threads` threads (run_chunks).
void run_chunk_split(const ChunkSplit& split, ChunkSplitArgs& args, int threads);

}  // namespace opforge_cpu
