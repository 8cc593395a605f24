// The activations of the recurrent cells over a contiguous run of gate values, in place.
#pragma once

#include <cstdint>

#include "core/recurrent.hpp"

namespace opforge_cpu {

// v[0..n) = act(v[0..n)); NaN propagates like the NumPy reference (np.maximum keeps it too).
// f32: vectorised approximations (expf ~1 ulp, tanhf ~2 ulp; see rnn_activations.cpp).
void activate(Act a, float* v, int64_t n);
// f64: libm (the f64 path is for exactness, not speed).
void activate(Act a, double* v, int64_t n);

}  // namespace opforge_cpu
