// Shared by AdaptiveAvgPool-8 and AdaptiveMaxPool-8: output bin i of an axis of size L pooled to
// O covers the inputs [floor(i * L / O), ceil((i + 1) * L / O)).
#pragma once

#include <cstdint>

#include "kernels/common.hpp"

namespace opforge_cpu::adaptive_pool {

// Spatial sizes padded to 3 (leading 1s) so that one loop nest serves 1-D, 2-D and 3-D data.
inline void spatial3(const Shape& s, int64_t* d) {
  const size_t n = s.size() - 2;
  for (size_t i = 0; i < 3; ++i) d[i] = i < 3 - n ? 1 : s[2 + i - (3 - n)];
}
inline int64_t bin_start(int64_t i, int64_t len, int64_t out) { return (i * len) / out; }
inline int64_t bin_end(int64_t i, int64_t len, int64_t out) { return ((i + 1) * len + out - 1) / out; }

}  // namespace opforge_cpu::adaptive_pool
