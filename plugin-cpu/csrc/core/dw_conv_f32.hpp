// An f32 depthwise 2D convolution of our own (dw_conv_f32.cpp): dense channels-last f32 source
// and destination (the layout oneDNN 3.2's brdgmm_dw reads and writes in our f32 chain), bias
// and eltwise post-ops fused, in an AVX-512 build (16 channels a vector) and an AVX2+FMA build
// (8) of the same tile text (dw_conv_f32_tile.inc).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dw_conv_kernel.hpp"

namespace opforge_cpu {

class DwConvF32 final : public DwConvKernel {
 public:
  enum class Isa { avx2, avx512 };
  // weights: [C, kh, kw] f32 (the ONNX [C, 1, kh, kw] bytes); bias: [C] f32 or nullptr.
  // tile3: the 3x3 multi-row tile (dw_conv_f32_tile3.inc) where tile3_supported(g), else the
  // general one; both give the same bits.
  DwConvF32(const DwGeometry& g, const float* weights, const float* bias, std::vector<PostOp> post, Isa isa,
            bool tile3 = false);
  // src: [N, IH, IW, C] f32; dst: [N, OH, OW, C] f32; output-row chunks (run_dw_rows).
  void run(const void* src, void* dst, int threads) const override;
  const char* exec_type() const override { return isa_ == Isa::avx512 ? "dw:avx512_f32" : "dw:avx2_f32"; }
  // The output rows [oy0, oy1) of image n, every channel (what one chunk computes).
  void rows(const float* src, float* dst, int64_t n, int64_t oy0, int64_t oy1) const;
  // Whether the CPU and oneDNN's effective ISA allow the build for `isa` (host_isa.hpp).
  static bool host_supported(Isa isa);
  // Whether a tile exists for this kernel width and column stride (3, 5, 7; 1, 2).
  static bool shape_supported(int64_t kw, int64_t sw);
  // Whether the 3x3 multi-row tile runs g: a 3x3 kernel, the same stride (1 or 2) both ways.
  static bool tile3_supported(const DwGeometry& g);
  bool uses_tile3() const { return tile3_; }

 private:
  DwGeometry g_;
  Isa isa_;
  int64_t lanes_;               // 16 (AVX-512) or 8 (AVX2) channels a vector
  bool tile3_;                  // the 3x3 tile (tile3_supported and asked for)
  int64_t blocks_;              // channel blocks of lanes_
  std::vector<float> weights_;  // [block][kh][kw][lanes], zero past the last channel
  std::vector<float> bias_;     // [block][lanes]
  std::vector<PostOp> post_;
};

}  // namespace opforge_cpu
