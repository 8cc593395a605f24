// A bf16 MatMul with constant weights at 2+ threads run as row chunks on the chunk pool
// (matmul_row_split.cpp).
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <optional>

#include "core/chunk_split.hpp"

namespace opforge_cpu {

// Builds the sub-primitive of a chunk of rows: (src [r, K], weights, dst [r, N], the gate
// operand [r, N] of a mul_input post-op or a zero desc).
using RowMatMulMaker = std::function<dnnl::matmul::primitive_desc(
    const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&, const dnnl::memory::desc&)>;

// The split of a 2-D MatMul `pd` (already chosen, bf16 source and packed constant weights) into
// chunks of rows, or none: one thread, switched off (OPFORGE_CPU_MATMUL_SPLIT=0), a source,
// destination or gate operand that is not dense row-major, fewer than two chunks of kMinRows, a
// weight matrix above the size limit (L2: every chunk reads it all), or a chunk size without a brgemm sub-primitive on the whole
// MatMul's packed weights. The result runs with bind_chunk_split / run_chunk_split
// (chunk_split.hpp).
std::optional<ChunkSplit> plan_row_split(const dnnl::matmul::primitive_desc& pd, const dnnl::memory::desc& gate,
                                         int threads, const RowMatMulMaker& make);

}  // namespace opforge_cpu
