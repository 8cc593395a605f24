// What our depthwise convolution kernels share (dw_conv_bf16.hpp, dw_conv_f32.hpp): the
// geometry, the fused activations, and the interface nn.cpp runs them through in place of
// oneDNN's primitive (same source and destination memory).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/chunk_pool.hpp"
#include "core/env_switch.hpp"
#include "core/post_op.hpp"

namespace opforge_cpu {

struct DwGeometry {
  int64_t batch, channels, ih, iw, oh, ow, kh, kw, sh, sw, pad_top, pad_left;
};

class DwConvKernel {
 public:
  virtual ~DwConvKernel() = default;
  // src: [N, IH, IW, C], dst: [N, OH, OW, C], dense channels-last, of the kernel's types; up to
  // `threads` threads (every output computed the same way whichever thread computes it).
  virtual void run(const void* src, void* dst, int threads) const = 0;
  // The exec type profiling reports (dw:avx512_bf16, dw:avx512_f32, dw:avx2_f32).
  virtual const char* exec_type() const = 0;
};

// The row chunks a thread: 4. OPFORGE_CPU_DW_CHUNKS overrides it (read once), for measuring
// (mobilenet_v2 bf16 at 2 threads, stop 17: 1, 2 and 4 a thread gave the same depthwise sums
// within the host's noise at load 6).
inline int64_t dw_chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_DW_CHUNKS", 4));
  return value;
}

// Chunks of whole output rows for `threads` threads, dw_chunks_per_thread() a thread (a thread
// that lost its vCPU for a while holds the step up by one small chunk only), each inside one
// image; rows(n, oy0, oy1) computes one chunk (chunk_pool.hpp's run_chunks).
template <class Rows> void run_dw_rows(const DwGeometry& g, int threads, const Rows& rows) {
  const int64_t total = g.batch * g.oh;  // output rows over the batch
  if (threads <= 1 || total < 2) {
    for (int64_t n = 0; n < g.batch; ++n) rows(n, int64_t{0}, g.oh);
    return;
  }
  const int64_t want = std::min<int64_t>(total, int64_t{threads} * dw_chunks_per_thread());
  const int64_t per_image = std::max<int64_t>(1, (want + g.batch - 1) / g.batch);
  const int64_t chunks = g.batch * std::min(per_image, g.oh);
  const int64_t split = chunks / g.batch;
  run_chunks(static_cast<int>(chunks), threads, [&](int c, int) {
    const int64_t n = c / split, i = c % split;
    rows(n, g.oh * i / split, g.oh * (i + 1) / split);
  }, /*runs_primitives=*/false);
}

}  // namespace opforge_cpu
