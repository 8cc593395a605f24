// What the int8 byte-wise kernels (QuantizedConcat, QuantizedLookup, QuantizedEltwise) share:
// they work on u8/s8 tensors in one dense layout, plain or channels-last (a quantized
// convolution's nhwc output is read where it lies), and bring an input in any other layout (a
// blocked one) into that layout in scratch first.
#pragma once

#include <unordered_map>
#include <vector>

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

// Axis order of a dense, unblocked descriptor from outermost to innermost (dimensions of size 1
// placed where the plain order has them); empty for a blocked (nChw16c) or padded one.
std::vector<int> dense_order(const dnnl::memory::desc& md);
// The channels-last order (0, 2, 3, ..., 1) of a rank >= 3 tensor; the plain order otherwise.
std::vector<int> channels_last_order(size_t rank);
// The dense descriptor of `shape` with its axes laid out in `order` (outermost first).
dnnl::memory::desc ordered_md(DType t, const Shape& shape, const std::vector<int>& order);
// Whether two dense descriptors of the same shape put every element at the same offset (they may
// differ only in where dimensions of size 1 sit).
bool same_dense_layout(const Shape& shape, const std::vector<int>& a, const std::vector<int>& b);

// The byte-wise kernels' hot loops are compiled twice (the build targets baseline x86-64): an
// always-inlined body, called from a wrapper built for AVX-512 (F/BW/VL/DQ) when the host has it,
// else from the baseline one; 16 lanes instead of SSE2's 4 for the widening sums and the f32
// requantization. Like the rest of the plugin they follow oneDNN's effective ISA: with
// ONEDNN_MAX_CPU_ISA=AVX2 (an emulated AVX2 host) the baseline builds run.
#if defined(__x86_64__) && defined(__GNUC__)
#define OPFORGE_INT8_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define OPFORGE_INT8_INLINE __attribute__((always_inline)) inline
#else
#define OPFORGE_INT8_AVX512
#define OPFORGE_INT8_INLINE inline
#endif
bool int8_avx512();
// The suffix of the byte-wise kernels' impl names saying which build runs (":avx512" or "").
const char* int8_isa_suffix();

// y[i] = table[x[i]] for n bytes: 64 at a time with AVX-512 VBMI byte permutes where the CPU has
// them (a gather the compiler cannot vectorise otherwise: ~20x faster), else one by one.
void lookup_bytes(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n);

// Inputs read in one wanted dense order: in place when they already are in it, else reordered
// into the kernel's scratch before each run.
class StagedInputs {
 public:
  struct Bound {
    std::vector<std::unordered_map<int, dnnl::memory>> reorders;  // per staged input
    std::vector<const void*> data;                                  // where each input is read
  };
  // Adds input `info`, wanted in `order`; scratch is laid out from `scratch_offset` on.
  void add(const TensorInfo& info, const std::vector<int>& order);
  size_t scratch_bytes() const { return scratch_; }
  bool any() const { return scratch_ > 0; }
  void bind(Bound& b, const TensorView* in, char* scratch) const;
  // Runs the reorders (and waits for them) so that b.data can be read.
  void run(RunContext& ctx, Bound& b) const;

 private:
  struct Input {
    dnnl::memory::desc user, want;
    dnnl::reorder reorder;
    bool staged = false;
    size_t offset = 0;
  };
  std::vector<Input> inputs_;
  size_t scratch_ = 0;
};

}  // namespace opforge_cpu
