// MatMul of activations by constant 2-D weights as oneDNN's inner_product ("FullyConnected", as
// OpenVINO runs it), where that beats oneDNN's matmul primitive. See docs/kernel-library.md.
#pragma once

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

// The primitive an f32 MatMul with constant weights runs on, from the environment variable
// OPFORGE_CPU_MATMUL: unset or empty, the measured rule (`automatic`); "matmul" or
// "inner_product" force one primitive for every eligible MatMul. The rule
// (fc_inner_product_by_default): inner_product on an AMD CPU whose oneDNN runs at AVX2 (no
// AVX-512, or capped with ONEDNN_MAX_CPU_ISA=AVX2) for M >= 2 rows, where oneDNN 3.2's matmul is
// `gemm:jit` and its `brgemm:avx2` inner product was 1.6-1.8x faster on wide layers (AMD Zen 5
// capped to AVX2, stop 18), the gap issue 15 measured on an AVX2 Zen 3; matmul everywhere else:
// natively both are brgemm and equal, and on the Intel host of stop 17 capped to AVX2 neither won
// consistently (docs/kernel-library.md). OPFORGE_CPU_FC_AMD_AVX2=0 turns the rule off (matmul).
enum class MatMulPrimitive { automatic, matmul, inner_product };
MatMulPrimitive matmul_primitive_choice();

// The measured rule above for an eligible MatMul of `rows` (M) rows.
bool fc_inner_product_by_default(int64_t rows);

// An inner_product kernel for node `n` (a MatMul whose batch dimensions flatten into M, weights
// constant and 2-D, bias per output column), or nullptr when the node does not have that form,
// the choice above is matmul, or it is automatic and the rule says matmul.
std::unique_ptr<Kernel> make_fully_connected(NodeDesc& n);

}  // namespace opforge_cpu
