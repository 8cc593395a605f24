// A bf16 depthwise 2D convolution of our own (dw_conv_bf16.cpp): channels-last bf16 source,
// f32 arithmetic, bf16 or f32 channels-last destination, bias and eltwise post-ops fused. It runs
// where oneDNN 3.2 would run brdgmm_dw (slower per thread than OpenVINO's brgconv dw kernel).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dw_conv_kernel.hpp"

namespace opforge_cpu {

class DwConvBf16 final : public DwConvKernel {
 public:
  // weights: [C, kh, kw] f32 (the ONNX [C, 1, kh, kw] bytes; rounded to bf16 here); bias: [C]
  // f32 or nullptr (kept in f32: oneDNN's brdgmm_dw took a bf16 destination only with a bf16 bias).
  DwConvBf16(const DwGeometry& g, const float* weights, const float* bias, std::vector<PostOp> post, bool dst_bf16);
  // src: [N, IH, IW, C] bf16 bits; dst: [N, OH, OW, C] bf16 bits or f32. Output rows are split
  // into chunks that up to `threads` threads claim (chunk_pool.hpp); every output is computed
  // the same way whichever thread computes it (1 vs 2 threads bit-exact).
  void run(const void* src, void* dst, int threads) const override;
  const char* exec_type() const override { return "dw:avx512_bf16"; }
  // The output rows [oy0, oy1) of image n, every channel (what one chunk computes).
  void rows(const uint16_t* src, void* dst, int64_t n, int64_t oy0, int64_t oy1) const;
  // Whether this build and host can run it (AVX-512 with AVX512_BF16).
  static bool host_supported();
  // Whether a tile exists for this kernel width and column stride (3, 5, 7; 1, 2).
  static bool shape_supported(int64_t kw, int64_t sw);

 private:
  DwGeometry g_;
  int64_t blocks_;              // channel blocks of 16
  std::vector<float> weights_;  // [block][kh][kw][16], zero past the last channel
  std::vector<float> bias_;     // [block][16]
  int64_t pairs_;               // whole pairs of blocks (32 channels) run by tile_pair
  std::vector<float> weights_pair_;  // [pair][kh][kw][32]: even channels, then odd ones
  std::vector<float> bias_pair_;     // [pair][32], the same order
  std::vector<PostOp> post_;
  bool dst_bf16_;
};

}  // namespace opforge_cpu
