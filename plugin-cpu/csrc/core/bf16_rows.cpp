// Whole rows of bf16 bit patterns to and from f32, for the kernels that compute a bf16 tensor's
// row in f32 and store it in bf16 (resample.cpp's bf16 Interpolate, the bf16 RMSNorm rows).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/bf16_bits.hpp"
#include "core/host_isa.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

// bf16 bits <-> f32 rows (declared in bf16_bits.hpp): widening is exact; narrowing rounds to nearest even and keeps a
// NaN a (quiet) NaN, as oneDNN's f32 -> bf16 reorder does. Plain loops GCC vectorises.
// (built per ISA, picked at run time: core/isa_clones.hpp)
static inline __attribute__((always_inline)) void bf16_row_to_f32_loop(const uint16_t* __restrict x,
                                                                       float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &u, sizeof(float));
  }
}
OPFORGE_ISA_CLONES(, "avx512f", bf16_row_to_f32, bf16_row_to_f32_loop,
                   (const uint16_t* __restrict x, float* __restrict y, int64_t n), (x, y, n))

static inline __attribute__((always_inline)) void f32_row_to_bf16_loop(const float* __restrict x,
                                                                       uint16_t* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof(float));
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    y[i] = static_cast<uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
  }
}
OPFORGE_ISA_CLONES(static, "avx512f", f32_row_to_bf16_scalar, f32_row_to_bf16_loop,
                   (const float* __restrict x, uint16_t* __restrict y, int64_t n), (x, y, n))

// AVX512_BF16's conversion (what oneDNN's reorder uses on such hosts; f32 denormals become zero):
// the loop above narrows
// 16 lanes at a time poorly (0.4 ns an element, 0.8 ms for unet_small's 2M-element upsampling).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
void f32_row_to_bf16_avx512(const float* __restrict x, uint16_t* __restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i))));
  if (i < n) {
    const __mmask16 lanes = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm256_mask_storeu_epi16(y + i, lanes, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, x + i))));
  }
}

void f32_row_to_bf16(const float* x, uint16_t* y, int64_t n) {
  static const bool avx512_bf16 = host_has_avx512_bf16();
  if (avx512_bf16) f32_row_to_bf16_avx512(x, y, n);
  else f32_row_to_bf16_scalar(x, y, n);
}

}  // namespace opforge_cpu
