// The direct convolution of a few input channels (a network's first convolution, on the image):
// the arithmetic of stem_conv.cpp, free of the kernel interface so a C++ micro-benchmark can
// time it against oneDNN's primitive (see stem_conv_compute.cpp for why it exists).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/post_op.hpp"

namespace opforge_cpu {

struct StemGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1;  // source [N, C, H, W], plain (NCHW) f32
  int64_t o = 1, oh = 1, ow = 1;       // destination channels and size
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;  // dilation 1 = none
  int64_t pt = 0, pl = 0;              // padding before (after: whatever the output size implies)
};

// How the destination is laid out: nhwc (block 0) or channel blocks of `block` (nChw8c/16c,
// channels padded to a multiple of it, the padding written as zeros); the block must be 16.
struct StemDstLayout {
  int64_t block = 0;
};

class StemConvCompute {
 public:
  // weights [O, C, KH, KW] and bias [O] (or nullptr) in f32; packed here once.
  // (AVX-512 only: the caller checks the host)
  StemConvCompute(const StemGeometry& g, StemDstLayout dst, const float* weights, const float* bias,
                  std::vector<PostOp> post);
  // y (the destination layout) = conv(x); on up to `threads` threads (rows of output claimed
  // from a shared counter, run_chunks); the result does not depend on the thread count.
  void run(const float* x, float* y, int threads) const;
  // The rows [r0, r1) of N * OH (one thread).
  void run_rows(const float* x, float* y, int64_t r0, int64_t r1) const;

 private:
  StemGeometry g_;
  StemDstLayout dst_;
  static constexpr int lanes_ = 16;  // floats a zmm
  int64_t opad_;     // channels the packed weights hold: a multiple of lanes_ (and of the block)
  std::vector<float> w_;     // [O / lanes_ vectors][C][KH][KW][lanes_], zero-padded
  std::vector<float> bias_;  // [opad_]
  size_t w0_ = 0, b0_ = 0;   // where w_ and bias_ start (64-byte aligned)
  std::vector<PostOp> post_;
  bool stream_ = false;  // non-temporal stores: see the constructor
};

}  // namespace opforge_cpu
