// A per-channel f32 Multiply/Add over a channels-last tensor (a squeeze-excitation scale applied
// to a depthwise convolution's nhwc output): see channels_last_bcast.cpp.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>

#include "core/kernel.hpp"

namespace opforge_cpu {

// The kernel for x[N, C, spatial...] (f32, dense channels-last `x_md`, written in place in the
// same layout) op s[N or 1, C, 1...] (f32, C contiguous floats a batch), on an AVX-512 host;
// nullptr where it does not apply (then oneDNN's binary runs).
std::unique_ptr<Kernel> make_channels_last_bcast(dnnl::algorithm alg, int full, int other, const Shape& out,
                                                 const dnnl::memory::desc& x_md, const dnnl::memory::desc& s_md,
                                                 const dnnl::memory::desc& dst_md);

}  // namespace opforge_cpu
