// Standalone f32 Relu, Clip, Exp and HardSigmoid that keep NaN, in one pass over the data.
#pragma once

#include <memory>

#include "core/kernel.hpp"

namespace opforge_cpu {

// oneDNN's JIT relu, clip_v2, exp and hardsigmoid turn NaN into a number (relu(NaN) = 0,
// clip(NaN) = the lower bound, exp(NaN) = +inf); ONNX propagates NaN.
bool eltwise_loses_nan(dnnl::algorithm alg);

// A kernel for one of those algorithms over `count` floats (the tensor's plain elements) whose
// comparisons keep NaN: one read of x, one write of y, vectorised for the host's ISA.
std::unique_ptr<Kernel> make_nan_safe_eltwise(const Eltwise& op, int64_t count);

}  // namespace opforge_cpu
