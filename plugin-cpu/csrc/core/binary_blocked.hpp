// Element-wise binary ops (Multiply, Add) on inputs in a blocked (oneDNN-chosen) layout, so that a
// squeeze-excitation block's x[N,C,H,W] * s[N,C,1,1] needs no reorder of x to plain and back.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>

#include "core/kernel.hpp"

namespace opforge_cpu {

using PlainKernelMaker = std::function<std::unique_ptr<Kernel>(NodeDesc&)>;

// True when input 0 or 1 of the node arrives blocked.
bool has_blocked_input(const NodeDesc& n);

// f32 with one input of the output's shape: a oneDNN binary primitive reading both inputs in
// their layouts (the other broadcast, e.g. per channel), writing the full input's blocked layout
// when every reader accepts it, else plain. Otherwise (other types, both inputs broadcast, a
// non-commutative op whose full input is the second): the blocked inputs are reordered to plain
// into the request's scratch and `make_plain` builds the kernel that runs on them.
std::unique_ptr<Kernel> make_blocked_binary(NodeDesc& n, dnnl::algorithm alg, bool commutative,
                                            const PlainKernelMaker& make_plain);

// A kernel that reorders the node's blocked inputs to plain into the request's scratch, then runs
// what `make_plain` builds for plain inputs (a kernel that binds nothing): for layout-flexible
// kernels with a fast path for some layouts only (Interpolate on nhwc).
std::unique_ptr<Kernel> make_plain_inputs_kernel(const NodeDesc& n, const PlainKernelMaker& make_plain);

}  // namespace opforge_cpu
