// Reduce*: a reduction over constant axes. Kept and reduced dimensions are each collapsed where
// contiguous, then one of three loops runs, each with the operation fixed at compile time (no
// switch per element) and threaded over kept rows:
//  - a contiguous reduced run (ReduceMean over the last axes): 16 interleaved accumulators per row;
//  - kept elements contiguous, reduced axes outside them (a spatial reduction of an nChw16c or
//    nhwc tensor, a reduction over axis 0): one accumulator per kept element, a row of them
//    vectorised;
//  - anything else: a strided scalar loop.
// Floats accumulate sums and products in double (so a 1e6-element row is as exact as the
// reference's; a blocked spatial f32 Sum/Mean adds groups of 8 positions pairwise in f32 first),
// max/min in the element type with ONNX's NaN propagation; integers in 64 bits.
// A blocked (oneDNN-chosen) input is read in place when the axes are its spatial ones, else
// reordered to plain into the request's scratch first. A bf16 input (a bf16 convolution's
// output, which the emitter lets a squeeze-excitation's global pool read: emit.py
// _bf16_se_reader) is read as its exact f32 values by the same spatial loops, or converted to
// plain f32 by that reorder; the result is f32.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "core/bf16_bits.hpp"
#include "core/dnnl_util.hpp"
#include "core/elementwise.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

// A bf16 source element (its bits), a type of its own so that the loops take it apart from uint16_t.
struct Bf16Bits {
  uint16_t bits;
};

// Adds positions [0, np) of 16 bf16 channels (`ps` elements apart) into acc[16] (doubles) as the
// scalar loops below do, bit for bit: each 8 positions pairwise in f32, the groups and the tail in
// double; 16 lanes per instruction (AVX-512, which every host with bf16 storage has). The scalar
// loop converted element by element and made the bf16 pool slower than the f32 one it replaced.
#define OPFORGE_REDUCE_AVX512 __attribute__((target("avx512f,avx512bw"), always_inline)) inline
OPFORGE_REDUCE_AVX512 __m512 reduce_bf16x16(const uint16_t* q) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q))), 16));
}
OPFORGE_REDUCE_AVX512 void reduce_add_pd(__m512d& a0, __m512d& a1, __m512 g) {
  a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(g)));
  a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g), 1))));
}
__attribute__((target("avx512f,avx512bw"))) inline void reduce_bf16_sum16(const uint16_t* p, int64_t ps, int64_t np,
                                                                       double* acc) {
  __m512d a0 = _mm512_loadu_pd(acc), a1 = _mm512_loadu_pd(acc + 8);
  int64_t i = 0;
  for (; i + 8 <= np; i += 8, p += 8 * ps) {
    const __m512 g = _mm512_add_ps(
        _mm512_add_ps(_mm512_add_ps(reduce_bf16x16(p), reduce_bf16x16(p + ps)),
                      _mm512_add_ps(reduce_bf16x16(p + 2 * ps), reduce_bf16x16(p + 3 * ps))),
        _mm512_add_ps(_mm512_add_ps(reduce_bf16x16(p + 4 * ps), reduce_bf16x16(p + 5 * ps)),
                      _mm512_add_ps(reduce_bf16x16(p + 6 * ps), reduce_bf16x16(p + 7 * ps))));
    reduce_add_pd(a0, a1, g);
  }
  for (; i < np; ++i, p += ps) reduce_add_pd(a0, a1, reduce_bf16x16(p));
  _mm512_storeu_pd(acc, a0);
  _mm512_storeu_pd(acc + 8, a1);
}
// The same for 32 channels, a whole 64-byte line of bf16 per position: a run of 16 reads half
// a line, and the next run of the segment fetched the line again after the segment's positions
// had evicted it from L1 (the bf16 pool was then slower than the f32 one it replaced).
__attribute__((target("avx512f,avx512bw"))) inline void reduce_bf16_sum32(const uint16_t* p, int64_t ps, int64_t np,
                                                                       double* acc) {
  __m512d a0 = _mm512_loadu_pd(acc), a1 = _mm512_loadu_pd(acc + 8);
  __m512d a2 = _mm512_loadu_pd(acc + 16), a3 = _mm512_loadu_pd(acc + 24);
  int64_t i = 0;
  for (; i + 8 <= np; i += 8, p += 8 * ps) {
    for (int h = 0; h < 2; ++h) {
      const uint16_t* q = p + 16 * h;
      const __m512 g = _mm512_add_ps(
          _mm512_add_ps(_mm512_add_ps(reduce_bf16x16(q), reduce_bf16x16(q + ps)),
                        _mm512_add_ps(reduce_bf16x16(q + 2 * ps), reduce_bf16x16(q + 3 * ps))),
          _mm512_add_ps(_mm512_add_ps(reduce_bf16x16(q + 4 * ps), reduce_bf16x16(q + 5 * ps)),
                        _mm512_add_ps(reduce_bf16x16(q + 6 * ps), reduce_bf16x16(q + 7 * ps))));
      if (h == 0) reduce_add_pd(a0, a1, g);
      else reduce_add_pd(a2, a3, g);
    }
  }
  for (; i < np; ++i, p += ps) {
    reduce_add_pd(a0, a1, reduce_bf16x16(p));
    reduce_add_pd(a2, a3, reduce_bf16x16(p + 16));
  }
  _mm512_storeu_pd(acc, a0);
  _mm512_storeu_pd(acc + 8, a1);
  _mm512_storeu_pd(acc + 16, a2);
  _mm512_storeu_pd(acc + 24, a3);
}
inline bool reduce_has_avx512() {
  static const bool has = host_has_avx512();
  return has;
}

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, And, Or };

// One reduction's accumulator type, start value, step and result.
template <Reduce OP, class T> struct ReduceOp {
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  static constexpr bool kExtreme = OP == Reduce::Max || OP == Reduce::Min;
  using Acc = std::conditional_t<kExtreme || OP == Reduce::And || OP == Reduce::Or, T,
                                 std::conditional_t<kFloat, double, std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>>>;
  static Acc init() {
    if constexpr (OP == Reduce::Max) return kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else if constexpr (OP == Reduce::Min) return kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    else if constexpr (OP == Reduce::Prod || OP == Reduce::And) return Acc(1);
    else return Acc(0);
  }
  // Written as selects so that the loops over lanes vectorise; a NaN stays once taken.
  static Acc step(Acc a, T v) {
    if constexpr (OP == Reduce::Max) {
      if constexpr (kFloat) return (v > a) | (v != v) ? v : a;
      else return v > a ? v : a;
    } else if constexpr (OP == Reduce::Min) {
      if constexpr (kFloat) return (v < a) | (v != v) ? v : a;
      else return v < a ? v : a;
    } else if constexpr (OP == Reduce::Prod) {
      return a * static_cast<Acc>(v);
    } else if constexpr (OP == Reduce::L1) {
      Acc w = static_cast<Acc>(v);
      if constexpr (std::is_unsigned_v<Acc>) return a + w;
      else return a + (w < 0 ? -w : w);
    } else if constexpr (OP == Reduce::L2) {
      Acc w = static_cast<Acc>(v);
      return a + w * w;
    } else if constexpr (OP == Reduce::And) {
      return static_cast<Acc>((a != Acc(0)) & (v != T(0)));
    } else if constexpr (OP == Reduce::Or) {
      return static_cast<Acc>((a != Acc(0)) | (v != T(0)));
    } else {
      return a + static_cast<Acc>(v);
    }
  }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kExtreme || OP == Reduce::And || OP == Reduce::Or) return step(a, static_cast<T>(b));
    else if constexpr (OP == Reduce::Prod) return a * b;
    else return a + b;
  }
  static T finish(Acc a, int64_t count) {
    if constexpr (OP == Reduce::Mean) {
      if constexpr (kFloat) return static_cast<T>(count ? a / static_cast<Acc>(count) : NAN);
      else return static_cast<T>(count ? a / static_cast<Acc>(count) : 0);
    } else if constexpr (OP == Reduce::L2) {
      return static_cast<T>(std::sqrt(static_cast<double>(a)));
    } else {
      return static_cast<T>(a);
    }
  }
};

template <class T> class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const NodeDesc& n, Reduce op) : op_(op) {
    const Shape& s = n.in(0).shape;
    const int64_t r = static_cast<int64_t>(s.size());
    std::vector<bool> red(r, false);
    auto axes = n.const_ints(1);
    identity_ = axes.empty();
    for (auto a : axes) red[normalize_axis(a, r)] = true;
    for (int64_t i = 0; i < r; ++i) (red[i] ? count_ : kept_) *= s[i];
    bf16_src_ = n.in(0).blocked && n.in(0).md.get_data_type() == dnnl::memory::data_type::bf16;
    if (bf16_src_ && !std::is_same_v<T, float>) throw CompileFailure("a bf16 Reduce input of a non-f32 node");
    if (n.in(0).blocked && !identity_ && plan_blocked_spatial(n.in(0), red)) {
      // An nhwc f32 Sum/Mean over many positions: fixed segments of positions (run_segmented).
      if (std::is_same_v<T, float> && block_stride_ == 0 && (op == Reduce::Sum || op == Reduce::Mean) &&
          count_ > kSegment) {
        segments_ = (count_ + kSegment - 1) / kSegment;
        scratch_ = static_cast<size_t>(batch_ * segments_ * channels_) * sizeof(double);
      }
      return;
    }
    if (n.in(0).blocked) {
      // Any other blocked layout: a oneDNN reorder to plain into scratch, then the plain loops.
      src_md_ = n.in(0).md;
      plain_md_ = plain_md(n.in(0).dtype, s);
      dnnl::reorder::primitive_desc pd(cpu_engine(), src_md_, cpu_engine(), plain_md_, default_attr());
      if (pd.scratchpad_desc().get_size() != 0) throw CompileFailure("the reorder of a blocked Reduce input needs scratch memory");
      reorder_ = dnnl::reorder(pd);
      scratch_ = plain_md_.get_size();
    }
    Shape st = strides_of(s);
    auto push = [](std::vector<int64_t>& dims, std::vector<int64_t>& strides, int64_t d, int64_t stv) {
      if (d == 1) return;
      if (!dims.empty() && strides.back() == stv * d) {
        dims.back() *= d;
        strides.back() = stv;
      } else {
        dims.push_back(d);
        strides.push_back(stv);
      }
    };
    for (int64_t i = 0; i < r; ++i) {
      if (red[i]) push(rdims_, rstr_, s[i], st[i]);
      else push(kdims_, kstr_, s[i], st[i]);
    }
  }
  std::string impl_name() const override {
    if (lanes_) return std::string(segments_ ? "reduce:blocked:segments" : "reduce:blocked") + (bf16_src_ ? ":bf16" : "");
    return reorder_ ? "reduce:reorder" : "reduce";
  }
  size_t scratch_bytes() const override { return scratch_; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    if (reorder_) {
      dnnl::memory src(src_md_, cpu_engine(), in[0].data), dst(plain_md_, cpu_engine(), ctx.scratch);
      reorder_->execute(*ctx.stream, src, dst);
      ctx.stream->wait();
      x = static_cast<const T*>(ctx.scratch);
    }
    if (identity_) {
      std::memcpy(y, x, out[0].bytes());
      return;
    }
    switch (op_) {
      case Reduce::Sum: return run_op<Reduce::Sum>(ctx, x, y);
      case Reduce::Mean: return run_op<Reduce::Mean>(ctx, x, y);
      case Reduce::Max: return run_op<Reduce::Max>(ctx, x, y);
      case Reduce::Min: return run_op<Reduce::Min>(ctx, x, y);
      case Reduce::Prod: return run_op<Reduce::Prod>(ctx, x, y);
      case Reduce::L1: return run_op<Reduce::L1>(ctx, x, y);
      case Reduce::L2: return run_op<Reduce::L2>(ctx, x, y);
      case Reduce::And: return run_op<Reduce::And>(ctx, x, y);
      case Reduce::Or: return run_op<Reduce::Or>(ctx, x, y);
    }
  }

 private:
  static constexpr int kLanes = 16;

  // The clean blocked cases: every spatial axis (and only they) reduced on a tensor whose
  // spatial positions are evenly strided runs of channels, nC[d]hw{8,16}c (runs of the block)
  // or n[d]hwc (runs of all channels), as oneDNN's convolutions write them.
  bool plan_blocked_spatial(const TensorInfo& t, const std::vector<bool>& red) {
    const auto& md = t.md;
    const int r = static_cast<int>(t.shape.size());
    if (!std::is_same_v<T, float> || r < 3 || red[0] || red[1]) return false;
    for (int i = 2; i < r; ++i)
      if (!red[i]) return false;
    if (md.get_format_kind() != dnnl::memory::format_kind::blocked || md.get_submemory_offset() != 0) return false;
    const auto strides = md.get_strides();
    const auto dims = md.get_dims();
    const int nblks = md.get_inner_nblks();
    if (nblks == 1 && md.get_inner_idxs()[0] == 1) {
      lanes_ = md.get_inner_blks()[0];
      pos_stride_ = lanes_;
      block_stride_ = strides[1];
    } else if (nblks == 0 && strides[1] == 1) {
      lanes_ = dims[1];
      pos_stride_ = strides[r - 1];
      block_stride_ = 0;
    } else {
      return false;
    }
    int64_t want = pos_stride_;
    for (int i = r - 1; i >= 2; --i) {
      if (strides[i] != want || want < lanes_) {
        lanes_ = 0;
        return false;
      }
      want *= dims[i];
    }
    batch_ = dims[0];
    channels_ = dims[1];
    batch_stride_ = strides[0];
    return true;
  }

  template <Reduce OP> void run_op(RunContext& ctx, const T* x, T* y) const {
    if (count_ == 0) {  // an empty reduction: every output is the start value
      for (int64_t o = 0; o < kept_; ++o) y[o] = ReduceOp<OP, T>::finish(ReduceOp<OP, T>::init(), 0);
      return;
    }
    if (lanes_) {
      if constexpr (std::is_same_v<T, float>)
        if (bf16_src_) return run_blocked<OP>(ctx, reinterpret_cast<const Bf16Bits*>(x), y);
      return run_blocked<OP>(ctx, x, y);
    }
    const int rr = static_cast<int>(rdims_.size());
    const int kr = static_cast<int>(kdims_.size());
    if (rr && rstr_.back() == 1) return run_rows<OP>(ctx, x, y);
    if (kr && kstr_.back() == 1 && kdims_.back() > 1) return run_columns<OP>(ctx, x, y);
    return run_strided<OP>(ctx, x, y);
  }

  int64_t kept_base(int64_t o) const {
    int64_t base = 0;
    for (int d = static_cast<int>(kdims_.size()) - 1; d >= 0; --d) {
      base += (o % kdims_[d]) * kstr_[d];
      o /= kdims_[d];
    }
    return base;
  }
  // Offset of the q-th run of the reduced dims except the last `skip`.
  int64_t reduced_offset(int64_t q, int skip) const {
    int64_t off = 0;
    for (int d = static_cast<int>(rdims_.size()) - 1 - skip; d >= 0; --d) {
      off += (q % rdims_[d]) * rstr_[d];
      q /= rdims_[d];
    }
    return off;
  }
  int64_t row_grain() const { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, count_)); }

  // Reduced elements contiguous (innermost reduced dim has stride 1).
  template <Reduce OP> void run_rows(RunContext& ctx, const T* x, T* y) const {
    using R = ReduceOp<OP, T>;
    using Acc = typename R::Acc;
    const int64_t inner = rdims_.back(), outer = count_ / inner;
    parallel_range(kept_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + kept_base(o);
        Acc lane[kLanes];
        for (int l = 0; l < kLanes; ++l) lane[l] = R::init();
        Acc tail = R::init();
        for (int64_t q = 0; q < outer; ++q) {
          const T* p = row + reduced_offset(q, 1);
          int64_t i = 0;
          for (; i + kLanes <= inner; i += kLanes)
            for (int l = 0; l < kLanes; ++l) lane[l] = R::step(lane[l], p[i + l]);
          for (; i < inner; ++i) tail = R::step(tail, p[i]);
        }
        // Pairwise over the lanes.
        for (int w = kLanes / 2; w >= 1; w /= 2)
          for (int l = 0; l < w; ++l) lane[l] = R::combine(lane[l], lane[l + w]);
        y[o] = R::finish(R::combine(lane[0], tail), count_);
      }
    }, row_grain());
  }

  // Kept elements contiguous, reduced dims strided: a vector of accumulators per kept chunk.
  template <Reduce OP> void run_columns(RunContext& ctx, const T* x, T* y) const {
    using R = ReduceOp<OP, T>;
    using Acc = typename R::Acc;
    constexpr int64_t kChunk = 64;
    const int64_t width = kdims_.back(), groups = kept_ / width;
    const int64_t chunks = (width + kChunk - 1) / kChunk;
    parallel_range(groups * chunks, ctx.num_threads, [&](int64_t b, int64_t e) {
      Acc acc[kChunk];
      for (int64_t t = b; t < e; ++t) {
        const int64_t g = t / chunks, j0 = (t % chunks) * kChunk, w = std::min(kChunk, width - j0);
        const T* base = x + kept_base(g * width) + j0;
        for (int64_t j = 0; j < w; ++j) acc[j] = R::init();
        for (int64_t q = 0; q < count_; ++q) {
          const T* p = base + reduced_offset(q, 0);
          if (w == kChunk) {
            for (int64_t j = 0; j < kChunk; ++j) acc[j] = R::step(acc[j], p[j]);
          } else {
            for (int64_t j = 0; j < w; ++j) acc[j] = R::step(acc[j], p[j]);
          }
        }
        T* dst = y + g * width + j0;
        for (int64_t j = 0; j < w; ++j) dst[j] = R::finish(acc[j], count_);
      }
    }, std::max<int64_t>(1, row_grain() / kChunk));
  }

  template <Reduce OP> void run_strided(RunContext& ctx, const T* x, T* y) const {
    using R = ReduceOp<OP, T>;
    const int rr = static_cast<int>(rdims_.size());
    const int64_t inner = rr ? rdims_.back() : 1, is = rr ? rstr_.back() : 1;
    const int64_t outer = inner ? count_ / inner : 0;
    parallel_range(kept_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + kept_base(o);
        auto acc = R::init();
        for (int64_t q = 0; q < outer; ++q) {
          const T* p = row + reduced_offset(q, 1);
          for (int64_t i = 0; i < inner; ++i) acc = R::step(acc, p[i * is]);
        }
        y[o] = R::finish(acc, count_);
      }
    }, row_grain());
  }

  // Spatial reduction of a blocked tensor: a channel block's positions are runs of `lanes_`
  // channels `pos_stride_` apart, accumulated 16 lanes at a time (one nChw16c block, or 16
  // channels of an nhwc run).
  // The value of a source element: f32 as it is, bf16 bits as their exact f32 value.
  static T val(T v) { return v; }
  static float val(Bf16Bits b) { return bf16_bits_to_f32(b.bits); }

  template <Reduce OP, class Src> void run_blocked(RunContext& ctx, const Src* x, T* y) const {
    if (segments_) return run_segmented<OP>(ctx, x, y);
    using R = ReduceOp<OP, T>;
    using Acc = typename R::Acc;
    constexpr int64_t kChunk = 16;
    // Sum/Mean of f32: each 8 positions are added pairwise in f32 (error <= 3 ulp of their sum,
    // whatever the count), the groups in double: twice the speed of converting every element.
    constexpr bool kGrouped = std::is_same_v<T, float> && (OP == Reduce::Sum || OP == Reduce::Mean);
    const int64_t blocks = (channels_ + lanes_ - 1) / lanes_, chunks = (lanes_ + kChunk - 1) / kChunk;
    const int64_t positions = count_, ps = pos_stride_;
    parallel_range(batch_ * blocks * chunks, ctx.num_threads, [&](int64_t b, int64_t e) {
      Acc acc[kChunk];
      for (int64_t t = b; t < e; ++t) {
        const int64_t nb = t / (blocks * chunks), cb = t / chunks % blocks, j0 = t % chunks * kChunk;
        const int64_t c0 = cb * lanes_ + j0;
        const int64_t w = std::min({kChunk, lanes_ - j0, channels_ - c0});
        if (w <= 0) continue;
        const Src* p = x + nb * batch_stride_ + cb * block_stride_ + j0;
        for (int64_t l = 0; l < kChunk; ++l) acc[l] = R::init();
        int64_t i = 0;
        if constexpr (kGrouped && std::is_same_v<Src, Bf16Bits>) {
          if (w == kChunk && avx512_) {
            reduce_bf16_sum16(reinterpret_cast<const uint16_t*>(p), ps, positions, acc);
            i = positions;
          }
        }
        if (i == positions) {
        } else if (w == kChunk) {
          if constexpr (kGrouped) {
            for (; i + 8 <= positions; i += 8, p += 8 * ps) {
              float g[kChunk];
              for (int l = 0; l < kChunk; ++l)
                g[l] = ((val(p[l]) + val(p[ps + l])) + (val(p[2 * ps + l]) + val(p[3 * ps + l]))) +
                       ((val(p[4 * ps + l]) + val(p[5 * ps + l])) + (val(p[6 * ps + l]) + val(p[7 * ps + l])));
              for (int l = 0; l < kChunk; ++l) acc[l] += g[l];
            }
          }
          for (; i < positions; ++i, p += ps)
            for (int l = 0; l < kChunk; ++l) acc[l] = R::step(acc[l], val(p[l]));
        } else {
          for (; i < positions; ++i, p += ps)
            for (int64_t l = 0; l < w; ++l) acc[l] = R::step(acc[l], val(p[l]));
        }
        T* dst = y + nb * channels_ + c0;
        for (int64_t l = 0; l < w; ++l) {
          dst[l] = R::finish(acc[l], count_);
          if constexpr (kGrouped) {
            // An f32 group can overflow where the double sum would not (a mean of values near
            // FLT_MAX): any non-finite result is redone element by element in double.
            if (!std::isfinite(dst[l])) {
              Acc exact = R::init();
              const Src* q = x + nb * batch_stride_ + cb * block_stride_ + j0 + l;
              for (int64_t k = 0; k < positions; ++k) exact = R::step(exact, val(q[k * ps]));
              dst[l] = R::finish(exact, count_);
            }
          }
        }
      }
    }, std::max<int64_t>(1, row_grain() / 16));
  }

  // Spatial Sum/Mean of an nhwc f32 tensor (a squeeze-and-excitation's global pool after a
  // convolution): the positions are cut into fixed segments of kSegment that the threads share
  // out in order, each segment summed over every channel into scratch (doubles), and the
  // segment sums added in segment order. The convolution that wrote the tensor and the
  // per-channel Multiply that reads it next split it by positions too; split by channels (the
  // loop above), each core read half of every pixel from the other core's cache and that
  // Multiply then wrote lines both caches held: at 2 threads EfficientNet's pools took 1.3x and
  // the Multiply after each 2.5x their 1-thread time. Fixed segments keep the sum independent of
  // the thread count.
  static constexpr int64_t kSegment = 128;  // positions, a multiple of the 8-position groups
  template <Reduce OP, class Src> void run_segmented(RunContext& ctx, const Src* x, T* y) const {
    if constexpr (std::is_same_v<T, float> && (OP == Reduce::Sum || OP == Reduce::Mean)) {
      using R = ReduceOp<OP, T>;
      using Acc = typename R::Acc;
      static_assert(std::is_same_v<Acc, double>, "segment sums are kept in double");
      const int64_t C = channels_, ps = pos_stride_, S = segments_;
      Acc* part = static_cast<Acc*>(ctx.scratch);
      parallel_range(batch_ * S, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t nb = t / S, p0 = t % S * kSegment, np = std::min(kSegment, count_ - p0);
          int64_t c0 = 0;
          if constexpr (std::is_same_v<Src, Bf16Bits>) {
            if (avx512_) {
              for (; c0 + 32 <= C; c0 += 32) {
                double acc32[32] = {};
                reduce_bf16_sum32(reinterpret_cast<const uint16_t*>(x + nb * batch_stride_ + p0 * ps + c0), ps, np,
                                  acc32);
                for (int l = 0; l < 32; ++l) part[t * C + c0 + l] = acc32[l];
              }
            }
          }
          for (; c0 < C; c0 += 16) {
            const int64_t w = std::min<int64_t>(16, C - c0);
            const Src* p = x + nb * batch_stride_ + p0 * ps + c0;
            Acc acc[16];
            for (int l = 0; l < 16; ++l) acc[l] = R::init();
            int64_t i = 0;
            if constexpr (std::is_same_v<Src, Bf16Bits>) {
              if (w == 16 && avx512_) {
                reduce_bf16_sum16(reinterpret_cast<const uint16_t*>(p), ps, np, acc);
                i = np;
              }
            }
            if (i == np) {
            } else if (w == 16) {
              for (; i + 8 <= np; i += 8, p += 8 * ps) {
                float g[16];
                for (int l = 0; l < 16; ++l)
                  g[l] = ((val(p[l]) + val(p[ps + l])) + (val(p[2 * ps + l]) + val(p[3 * ps + l]))) +
                         ((val(p[4 * ps + l]) + val(p[5 * ps + l])) + (val(p[6 * ps + l]) + val(p[7 * ps + l])));
                for (int l = 0; l < 16; ++l) acc[l] += g[l];
              }
              for (; i < np; ++i, p += ps)
                for (int l = 0; l < 16; ++l) acc[l] = R::step(acc[l], val(p[l]));
            } else {
              for (; i < np; ++i, p += ps)
                for (int64_t l = 0; l < w; ++l) acc[l] = R::step(acc[l], val(p[l]));
            }
            for (int64_t l = 0; l < w; ++l) part[t * C + c0 + l] = acc[l];
          }
        }
      }, 1);
      for (int64_t nb = 0; nb < batch_; ++nb) {
        for (int64_t c = 0; c < C; ++c) {
          Acc total = R::init();
          for (int64_t s = 0; s < S; ++s) total = R::combine(total, part[(nb * S + s) * C + c]);
          T& dst = y[nb * C + c];
          dst = R::finish(total, count_);
          // As in run_blocked: an f32 group can overflow where the double sum would not.
          if (!std::isfinite(dst)) {
            Acc exact = R::init();
            const Src* q = x + nb * batch_stride_ + c;
            for (int64_t k = 0; k < count_; ++k) exact = R::step(exact, val(q[k * ps]));
            dst = R::finish(exact, count_);
          }
        }
      }
    }
  }

  Reduce op_;
  bool identity_ = false;
  std::vector<int64_t> kdims_, kstr_, rdims_, rstr_;
  int64_t count_ = 1, kept_ = 1;
  // Blocked spatial reduction (lanes_ > 0).
  int64_t lanes_ = 0, pos_stride_ = 0, batch_ = 0, channels_ = 0, batch_stride_ = 0, block_stride_ = 0;
  int64_t segments_ = 0;  // > 0: run_segmented
  bool bf16_src_ = false;  // the input holds bf16 (a bf16 convolution's output), read as f32
  bool avx512_ = reduce_has_avx512();  // reduce_bf16_sum16 for whole runs of 16 bf16 channels
  // Other blocked inputs: reordered to plain into scratch.
  std::optional<dnnl::reorder> reorder_;
  dnnl::memory::desc src_md_, plain_md_;
  size_t scratch_ = 0;
};

inline std::unique_ptr<Kernel> make_reduce(const NodeDesc& n, Reduce op) {
  std::unique_ptr<Kernel> k;
  if (op == Reduce::And || op == Reduce::Or) return std::make_unique<ReduceKernel<uint8_t>>(n, op);
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ReduceKernel<OPF_TYPE_OF(tag)>>(n, op); });
  return k;
}

inline std::string check_reduce(const NodeDesc& n) {
  if (!n.is_const(1)) return "Reduce ops need constant axes on the CPU device";
  DType t = n.in(0).dtype;
  if (t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

}  // namespace opforge_cpu
