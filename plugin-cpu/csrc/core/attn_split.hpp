// A bf16 MatMul of two run-time operands (attention's Q x K^T and P x V) at 2+ threads as chunks
// of (batches, row block) that the threads claim (attn_split.cpp), each chunk converting its own
// operands and running a one-thread oneDNN sub-primitive: one parallel region for the step
// instead of three (the source's conversion or folded Softmax, the weights' conversion, oneDNN's
// static 2-thread split).
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace opforge_cpu {

struct AttnSplit {
  struct Chunk {
    int prim;       // index into prims
    int64_t batch;  // first (flattened) batch
    int64_t row0;   // first row of it (0 when a chunk holds whole batches)
  };
  struct Prim {
    dnnl::matmul prim;  // created for one thread
    int64_t batches, rows;
    dnnl::memory::desc src, wei, dst, add;
  };
  std::vector<Prim> prims;
  std::vector<Chunk> chunks;
  int threads = 1;
  size_t slot_scratch = 0;     // scratchpad bytes a thread needs (64-aligned)
  size_t slot_wei = 0;         // bytes of a thread's own bf16 weights (blocks > 1), after the scratchpads
  size_t slot_src = 0;         // bytes of a thread's own bf16 source rows (heads), after its weights
  size_t slot_dst = 0;         // bytes of a thread's own scores (dense_chunks), after its source rows
  // A fused attention's Q x K^T (planned with force_rows): each chunk's Q rows gathered into the
  // thread's dense source buffer and its scores written densely into the thread's own buffer
  // (oneDNN 3.2 gives a 3-D sub-block of strided batches gemm:jit, not brgemm), where the P x V
  // chunk after it reads them (AttnSoftmax::chunk_scores).
  bool dense_chunks = false;
  size_t slot_bytes() const { return slot_wei + slot_src + slot_dst; }
  bool heads = false;          // chunks of all heads (a fused head merge): see plan_attn_split
  int64_t H = 1;               // the heads (heads), else 1
  int64_t batches = 1, M = 0, K = 0, N = 0;
  int64_t blocks = 1;          // row blocks of a batch (> 1: chunks of one batch share its weights)
  int64_t dst_batch_stride = 0, dst_row_stride = 0;  // elements of the destination
  size_t dst_elem = 4;
  int add_arg = 0;             // the binary post-op operand's argument key, or 0
  // The f32 inputs converted per chunk, through their own strides (a folded head-split
  // Transpose): per batch the offset of its rows (source) and slab (weights), in elements; the
  // source's row stride; the weights' lines (K rows of N, or N columns of K: the dimension read
  // with unit stride stays the inner one) and the stride between them. dense_*: the input has
  // the bf16 buffer's layout, converted in one pass.
  std::vector<int64_t> src_user_off, wei_user_off;
  int64_t src_user_row = 0, wei_lines = 0, wei_line_len = 0, wei_user_line = 0;
  bool dense_src = true, dense_wei = true;
};

// What the unsplit kernel does to its operands before the primitive, and how its operands are
// stored: the source rows arrive as f32 (converted to bf16), as the scores of a folded Softmax
// (the caller passes their pointers), or already as bf16; the weights as f32 slabs of K x N.
struct AttnSplitOperands {
  bool convert_src = false;
  dnnl::memory::desc src_user, wei_user;  // as the inputs store them
  // > 0: chunks of exactly force_group batches x force_rows rows, in the order the P x V split
  // cuts its own (a fused attention's Q x K^T, chunk i feeding P x V's chunk i: attn_fused_plan)
  int64_t force_group = 0, force_rows = 0;
};

// The split of bf16 MatMul `pd` (two run-time operands, no bias) when it qualifies: batches and
// rows of dense operands, a destination of uniform batch and row strides (a fused head merge
// included), a row-vector mask as the only binary post-op, and a brgemm sub-primitive for every
// chunk shape. `threads` is the step's thread count. OPFORGE_CPU_ATTN_SPLIT=0: no split.
std::optional<AttnSplit> plan_attn_split(const dnnl::matmul::primitive_desc& pd, const AttnSplitOperands& ops,
                                         int threads);

// One program state's buffers for the split: per thread slot a stream and, per sub-primitive,
// its memory objects (pointed at each chunk's data when it runs).
struct AttnSplitArgs {
  struct Mems {
    dnnl::memory src, wei, dst;
    std::unordered_map<int, dnnl::memory> args;
  };
  std::vector<dnnl::stream> streams;
  std::vector<std::vector<Mems>> mems;  // [slot][prim]
  std::vector<uint16_t*> slot_wei;     // per slot: its own bf16 weights (row blocks of a batch)
  std::vector<uint16_t*> slot_src;     // per slot: its own bf16 source rows (heads)
  std::vector<char*> slot_dst;         // per slot: its own scores (dense_chunks)
  std::vector<int64_t> slot_batch;     // the batch they hold, or -1
  const float* src_f32 = nullptr;
  const float* wei_f32 = nullptr;
  uint16_t* src_bf16 = nullptr;
  uint16_t* wei_bf16 = nullptr;
  char* dst = nullptr;
};

// `whole`: the unsplit primitive's arguments (its bf16 source and weights buffers, destination,
// binary operand); src_f32/wei_f32: the f32 inputs converted per chunk (or nullptr); `scratch`:
// threads x (slot_scratch + slot_bytes()) bytes.
AttnSplitArgs bind_attn_split(const AttnSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                              const void* src_f32, const void* wei_f32, char* scratch);

// The folded Softmax's inputs (softmax_rows_bf16), when the source is one.
struct AttnSoftmax {
  const float* scores = nullptr;
  const float* add = nullptr;
  int64_t add_rows = 1;
  // A fused attention: the P x V chunk's scores as its Q x K^T chunk wrote them into the thread's
  // buffer (batch i of the chunk at i x rows x K), instead of their place in `scores`.
  const float* chunk_scores = nullptr;
};

// Runs every chunk on up to `threads` threads (run_chunks).
void run_attn_split(const AttnSplit& split, AttnSplitArgs& args, const AttnSoftmax& softmax, int threads);

// A fused attention step (stop 16): Q x K^T and P x V (with its folded Softmax) in one region.
// OPFORGE_CPU_FUSED_ATTN=0 turns it off (read once).
bool fused_attn_enabled();
// The (group, rows) Q x K^T's chunks must have to feed P x V's split `pv` chunk by chunk: each of
// P x V's chunks of g batches (of H heads each when it holds all heads) and n rows reads exactly
// the score rows of Q x K^T's chunk of g*H batches and n rows. {0, 0} when `pv` cannot be fed so
// (a chunk of whole batches past a partial one).
std::pair<int64_t, int64_t> attn_fused_chunking(const AttnSplit& pv);
// Whether Q x K^T's split `qk` (planned with attn_fused_chunking(pv)) has chunk i over exactly
// the score rows P x V's chunk i reads.
bool attn_chunks_match(const AttnSplit& qk, const AttnSplit& pv);
// Chunk i of qk, then chunk i of pv, on the same thread, every chunk in one run_chunks region:
// one fork/join for the attention, the chunk's scores read back by the thread that wrote them
// while they are in its cache.
void run_attn_fused(const AttnSplit& qk, AttnSplitArgs& qk_args, const AttnSplit& pv, AttnSplitArgs& pv_args,
                    const AttnSoftmax& softmax, int threads);

}  // namespace opforge_cpu
