// The window walk of the channels-last 2D pooling kernels (max_pool.cpp's ChannelsLastMaxPool,
// avg_pool.cpp's ChannelsLastAvgPoolBf16): each output pixel's window as pointers to the C
// channels of its taps inside the input (taps in the padding are left out), output pixels split
// between the threads.
#pragma once

#include <algorithm>
#include <vector>

#include "core/elementwise.hpp"
#include "core/tensor.hpp"

namespace opforge_cpu {

struct Window2d {
  std::vector<int64_t> kernel, strides, pads_begin;
  std::vector<int64_t> dilations{1, 1};
};

// Calls f(taps, k, o) for every output pixel o of the [N, OH, OW] output `ys` over the nhwc
// input `x` of shape `xs` (given as [N, C, H, W]): taps[0..k) point at the window's taps.
template <class T, class F>
void for_each_nhwc_window(int num_threads, const T* x, const Shape& xs, const Shape& ys, const Window2d& w, F&& f) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  const int64_t taps_max = w.kernel[0] * w.kernel[1];
  parallel_range(N * OH * OW, num_threads, [&](int64_t b, int64_t e) {
    std::vector<const T*> taps(static_cast<size_t>(std::max<int64_t>(1, taps_max)));
    for (int64_t o = b; o < e; ++o) {
      const int64_t ow = o % OW, oh = (o / OW) % OH, nn = o / (OW * OH);
      int64_t k = 0;
      for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
        const int64_t ih = oh * w.strides[0] - w.pads_begin[0] + kh * w.dilations[0];
        if (ih < 0 || ih >= H) continue;
        for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
          const int64_t iw = ow * w.strides[1] - w.pads_begin[1] + kw * w.dilations[1];
          if (iw < 0 || iw >= W) continue;
          taps[k++] = x + ((nn * H + ih) * W + iw) * C;
        }
      }
      f(taps.data(), k, o);
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C * taps_max)));
}

}  // namespace opforge_cpu
