// bf16 <-> f32 on bit patterns, branch-free so that loops over them vectorise (the element-wise
// kernels of a bf16 program: BatchNorm, Relu, MaxPool read and write the bf16 tensors that the
// convolutions around them keep, see emit.py _bf16_storable).
#pragma once

#include <cstdint>
#include <cstring>

namespace opforge_cpu {

// Exact: a bf16 is the upper half of an f32.
inline float bf16_bits_to_f32(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as oneDNN's reorder and AVX512_BF16's vcvtneps2bf16: a NaN stays NaN
// (quietened, sign and upper payload kept) where the rounding add would have carried it into inf.
inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
}

// A bf16 (bits) below zero: negative, not -0, not NaN (relu makes exactly these 0).
inline bool bf16_bits_negative(uint16_t h) {
  const uint16_t mag = h & 0x7FFFu;
  return (h & 0x8000u) != 0 && mag != 0 && mag <= 0x7F80u;
}

// Rows (core/bf16_rows.cpp): widening is exact; narrowing is f32_to_bf16_bits per element, by
// AVX512_BF16's vcvtneps2bf16 where the host has it (16 lanes an instruction; like oneDNN's reorder
// on such hosts it flushes f32 denormals to zero), else by a loop of f32_to_bf16_bits.
void bf16_row_to_f32(const uint16_t* x, float* y, int64_t n);
void f32_row_to_bf16(const float* x, uint16_t* y, int64_t n);

}  // namespace opforge_cpu
