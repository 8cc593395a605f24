// SiLU / Swish (x * sigmoid(alpha x)) of an f32 1x1 convolution's output as a pass of our own
// after the primitive, in place of oneDNN 3.2's eltwise_swish post-op (swish_pass.cpp says why).
#pragma once

#include <cstdint>

namespace opforge_cpu {

// Whether a 1x1 f32 convolution ending in a Swish runs it as our pass on this host: AVX-512 in the
// CPU and in oneDNN's effective ISA (measured on an AMD Zen 5 VM, stop 24, and an Intel Emerald
// Rapids VM, stop 27), or else AVX2+FMA on an AMD CPU (measured on the Zen 5 capped to AVX2 only),
// and OPFORGE_CPU_CONV_SWISH_PASS not 0 (read once).
bool conv_swish_pass_on_this_host();

// x[i] = x[i] / (1 + e^(-alpha x[i])) for i in [0, n), in place, on up to `threads` threads, in
// the widest build the host allows (the caller checked conv_swish_pass_on_this_host). Each
// element's value does not depend on the thread count; a NaN stays NaN, -inf gives NaN
// (-inf / inf) as in ONNX Runtime's x * Sigmoid(x).
void swish_inplace(float* x, int64_t n, float alpha, int threads);

// The exec type suffix profiling shows on a convolution that runs the pass: "+swish:avx512" or
// "+swish:avx2".
const char* swish_pass_exec_suffix();

}  // namespace opforge_cpu
