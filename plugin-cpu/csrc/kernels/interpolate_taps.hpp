// Interpolate's per-axis weights, shared with the kernels that resample like it (the int8
// QuantizedInterpolate): computed exactly as the Interpolate kernel and its reference do.
#pragma once

#include <cstdint>

#include "core/kernel.hpp"
#include "core/resample.hpp"

namespace opforge_cpu {

// The row and column taps (taps[0]: H, taps[1]: W) of a node with Interpolate-11's attributes
// and constant inputs 1 (sizes or scales) and 2 (axes, optional) that resizes only the last two
// axes of its unpadded input; `planes` gets the product of the other dimensions. Returns false
// when the node resizes another axis, pads, or is empty; throws CompileFailure for a mode or
// coordinate mode the CPU has no weights for.
bool interpolate_plane_taps(const NodeDesc& n, ResampleTaps<float> (&taps)[2], int64_t& planes);

}  // namespace opforge_cpu
