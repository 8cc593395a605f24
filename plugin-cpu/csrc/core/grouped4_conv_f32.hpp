// An f32 grouped 2D convolution of 4 input and 4 output channels a group (ResNeXt-50's layer 1:
// 32 groups of 4 over 128 channels), of our own, for AVX2 hosts (grouped4_conv_f32.cpp). Dense
// channels-last f32 source and destination, bias and eltwise post-ops fused.
//
// Why: oneDNN 3.2 has no JIT kernel for groups of 4 at AVX2 and runs them as `gemm:jit`
// (im2col + sgemm per group): resnext50_32x4d f32 under ONEDNN_MAX_CPU_ISA=AVX2 spent 10.7 ms of
// its 83 ms in the three such convolutions, against OpenVINO's brgconv_avx2 on all 16 of its
// grouped ones in 7.0 ms (docs/kernel-library.md "Groups of 4 on an AVX2 host (stop 22)").
// AVX-512 hosts run oneDNN's jit kernel for these (untouched).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dw_conv_kernel.hpp"

namespace opforge_cpu {

class Grouped4ConvF32 final : public DwConvKernel {
 public:
  // g.channels: input = output channels (a multiple of 8); weights: the ONNX [C, 4, kh, kw] f32
  // bytes (output channel c reads input channels 4 * (c / 4) .. + 3); bias: [C] f32 or nullptr.
  Grouped4ConvF32(const DwGeometry& g, const float* weights, const float* bias, std::vector<PostOp> post);
  // src: [N, IH, IW, C] f32; dst: [N, OH, OW, C] f32; output-row chunks (run_dw_rows).
  void run(const void* src, void* dst, int threads) const override;
  const char* exec_type() const override { return "grouped4:avx2_f32"; }
  // The output rows [oy0, oy1) of image n, every channel (what one chunk computes).
  void rows(const float* src, float* dst, int64_t n, int64_t oy0, int64_t oy1) const;
  // An AVX2 host: AVX2+FMA in the CPU and oneDNN's effective ISA, no AVX-512 (host_isa.hpp;
  // ONEDNN_MAX_CPU_ISA=AVX2 emulates one).
  static bool host_supported();
  // Whether the kernel runs g: channels a positive multiple of 8, positive sizes and strides,
  // non-negative padding, kernels up to 7x7.
  static bool shape_supported(const DwGeometry& g);

 private:
  DwGeometry g_;
  int64_t blocks_;              // blocks of 8 channels (two groups)
  std::vector<float> weights_;  // [block][kh][kw][input channel of the group, 4][8 output lanes]
  std::vector<float> bias_;     // [C]
  std::vector<PostOp> post_;
};

}  // namespace opforge_cpu
