// What the int8 byte-wise kernels (QuantizedConcat, QuantizedLookup, QuantizedEltwise) share:
// they work on u8/s8 tensors in one dense layout, plain or channels-last (a quantized
// convolution's nhwc output is read where it lies), and bring an input in any other layout (a
// blocked one) into that layout in scratch first.
#pragma once

#include <memory>
#include <string>
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

// A 256-entry byte table (indexed by an input byte, holding an output byte) with the form the
// AVX2 lookup reads besides the values: set() fills both.
struct ByteTable {
  uint8_t values[256] = {};
  // steps[16k .. 16k+15] = values[16k ..] XOR values[16(k-1) ..] (k = 1..7, 9..15), the values
  // themselves for k = 0 and 8: the AVX2 lookup XORs the steps of rows 0..h (8..h) for a byte
  // whose high nibble is h < 8 (>= 8), which telescopes to row h.
  uint8_t steps[256] = {};
  void set(const uint8_t* table);
};
// y[i] = table.values[x[i]] for n bytes: 64 at a time with AVX-512 VBMI byte permutes where the
// CPU has them (a gather the compiler cannot vectorise otherwise: ~20x faster); else 32 at a time
// with AVX2 pshufb (16 lookups of 16 entries each, 1.25-2x the scalar loop) where the host has
// AVX2 (host_isa: an emulated AVX2 host too) unless OPFORGE_CPU_INT8_LOOKUP_AVX2=0; else one by one.
void lookup_bytes(const ByteTable& table, const uint8_t* x, uint8_t* y, int64_t n);
// ":avx512", ":avx2" or "": which lookup_bytes build runs here, for the impl names of the table
// kernels (":avx512" where the other byte-wise loops run AVX-512 too, as int8_isa_suffix()).
const char* lookup_isa_suffix();

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

// A byte-wise kernel that reads every input through StagedInputs (QuantizedConcat,
// QuantizedEltwise, QuantizedAvgPool, QuantizedInterpolate): binding the staging to a request and
// running it before the op are the same for all; a subclass adds its inputs to staged_ when it is
// built and does the op in compute(), input i read at data[i].
class StagedKernel : public Kernel {
 public:
  size_t scratch_bytes() const override { return staged_.scratch_bytes() + 64; }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                              void* scratch) override;
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override;

 protected:
  virtual void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const = 0;
  // A 4D image op's layouts: input 0 read channels-last (staged into it when it comes in another
  // layout), output 0 written channels-last where every reader takes that (allow_blocked_output),
  // else plain; returns whether it is channels-last.
  bool channels_last_io(NodeDesc& n);
  // `what`, after "reorder+" when an input is reordered into scratch first (the impl name)
  std::string staged_name(const std::string& what) const { return (staged_.any() ? "reorder+" : "") + what; }
  StagedInputs staged_;
};

// The byte kernels' element-type dispatch: calls f with `p` as const uint8_t* or const int8_t*
// (u8 or i8 `t`).
template <class F> void with_int8_input(DType t, const void* p, F&& f) {
  if (t == DType::u8) f(static_cast<const uint8_t*>(p));
  else f(static_cast<const int8_t*>(p));
}
// ...and with `y` as uint8_t* or int8_t* (u8 or i8 `t`) and the range of that type.
template <class F> void with_int8_output(DType t, void* y, F&& f) {
  if (t == DType::u8) f(static_cast<uint8_t*>(y), 0.f, 255.f);
  else f(static_cast<int8_t*>(y), -128.f, 127.f);
}

}  // namespace opforge_cpu
