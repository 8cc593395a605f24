// An int8 depthwise 2D convolution of our own (dw_conv_int8.cpp, stop 22): a dense channels-last
// u8/s8 source with a zero point, s8 weights with per-channel scales, an f32 bias, fused
// ReLU/Clip/linear post-ops and a requantized u8/s8 destination, the arithmetic of oneDNN 3.2's
// brdgmm_dw (the int8 QuantizedConvolution it replaces, kernels/quantized_convolution.cpp), in an
// AVX-512 build (16 channels a vector) and an AVX2+FMA build (8) of one tile text
// (dw_conv_int8_tile.inc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dw_conv_kernel.hpp"

namespace opforge_cpu {

// What the requantization needs (QuantParams of quantized_common.hpp, after its zero-point fold).
struct DwInt8Quant {
  bool src_signed = false;  // s8 source (else u8)
  bool dst_signed = false;  // s8 destination (else u8)
  int32_t src_zero_point = 0;
  float src_scale = 1.f;
  const float* wei_scales = nullptr;  // [C]
  const float* bias = nullptr;        // [C] f32, or nullptr
  float dst_scale = 1.f;
  int32_t dst_zero_point = 0;
};

class DwConvInt8 final : public DwConvKernel {
 public:
  enum class Isa { avx2, avx512 };
  // weights: [C, kh, kw] s8 (the ONNX [C, 1, 1, kh, kw] bytes); post: ReLU, Clip and linear
  // only (after the bias, in order; a destination shift of the zero-point fold is a linear one).
  DwConvInt8(const DwGeometry& g, const int8_t* weights, const DwInt8Quant& q, std::vector<PostOp> post, Isa isa);
  // src: [N, IH, IW, C] u8/s8; dst: [N, OH, OW, C] u8/s8; output-row chunks (run_dw_rows).
  void run(const void* src, void* dst, int threads) const override;
  const char* exec_type() const override { return isa_ == Isa::avx512 ? "dw:avx512_int8" : "dw:avx2_int8"; }
  // The output rows [oy0, oy1) of image n, every channel (what one chunk computes).
  void rows(const uint8_t* src, uint8_t* dst, int64_t n, int64_t oy0, int64_t oy1) const;
  // Whether the CPU and oneDNN's effective ISA allow the build for `isa` (host_isa.hpp).
  static bool host_supported(Isa isa);
  // "" when a tile runs g (a 3x3 or 5x5 kernel, the same stride 1 or 2 both ways, padding >= 0),
  // else why not; and "" when the post-ops are ones the kernel runs.
  static std::string why_not(const DwGeometry& g);
  static std::string why_not(const std::vector<PostOp>& post);

 private:
  DwGeometry g_;
  Isa isa_;
  int64_t lanes_;   // 16 (AVX-512) or 8 (AVX2) channels a vector
  int64_t blocks_;  // channel blocks of lanes_
  bool src_signed_, dst_signed_;
  float src_zero_point_, dst_mul_, dst_zero_point_, lo_, hi_;
  std::vector<float> weights_;  // [block][kh][kw][lanes] (small integers, exact), zero past the last channel
  std::vector<float> scale_;    // [block][lanes]: src_scale * wei_scale[c] (oneDNN's product)
  std::vector<float> bias_;     // [block][lanes]
  std::vector<PostOp> post_;
};

}  // namespace opforge_cpu
