// MatMul of activations by constant 2-D weights as oneDNN's inner_product ("FullyConnected", as
// OpenVINO runs it), where that beats oneDNN's matmul primitive. See docs/kernel-library.md.
#pragma once

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

// The primitive an f32 MatMul with constant weights runs on, from the environment variable
// OPFORGE_CPU_MATMUL: "matmul" (unset, the default) or "inner_product". Measured on an Intel
// AVX-512/AMX host, natively and limited to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2), inner_product was
// never faster in the benchmark models (docs/kernel-library.md); the switch stays so that a host
// where oneDNN's brgemm inner product beats matmul's gemm:jit (the AVX2 Zen 3 of issue 15) can be
// measured with the same build.
enum class MatMulPrimitive { matmul, inner_product };
MatMulPrimitive matmul_primitive_choice();

// An inner_product kernel for node `n` (a MatMul whose batch dimensions flatten into M, weights
// constant and 2-D, bias per output column), or nullptr when the node does not have that form or
// the choice above is matmul.
std::unique_ptr<Kernel> make_fully_connected(NodeDesc& n);

}  // namespace opforge_cpu
