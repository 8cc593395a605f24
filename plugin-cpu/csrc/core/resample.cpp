#include "core/resample.hpp"

#include "core/bf16_bits.hpp"
#include "core/isa_clones.hpp"

#include <immintrin.h>

#include "core/threading.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace opforge_cpu {

template <class T>
ResampleTaps<T> ResampleTaps<T>::from(int64_t n_in, const std::vector<std::vector<std::pair<int64_t, double>>>& taps) {
  ResampleTaps<T> r;
  r.n_in = n_in;
  r.n_out = static_cast<int64_t>(taps.size());
  r.identity = r.n_in == r.n_out;
  r.start.push_back(0);
  for (int64_t o = 0; o < r.n_out; ++o) {
    for (const auto& [i, wt] : taps[o]) {
      r.idx.push_back(i);
      r.w.push_back(static_cast<T>(wt));
    }
    r.start.push_back(static_cast<int64_t>(r.idx.size()));
    r.identity = r.identity && taps[o].size() == 1 && taps[o][0].first == o && static_cast<T>(taps[o][0].second) == T(1);
  }
  r.pairs = n_in <= std::numeric_limits<int32_t>::max();
  for (const auto& t : taps) r.pairs = r.pairs && (t.size() == 1 || t.size() == 2);
  if (r.pairs) {
    for (const auto& t : taps) {
      r.i0.push_back(static_cast<int32_t>(t[0].first));
      r.w0.push_back(static_cast<T>(t[0].second));
      r.i1.push_back(static_cast<int32_t>(t.size() > 1 ? t[1].first : t[0].first));
      r.w1.push_back(t.size() > 1 ? static_cast<T>(t[1].second) : T(0));
    }
  }
  return r;
}

// dst = sum_j w[j] * src[j], element by element (k >= 1 source rows of n elements).
template <class T> static inline void rows_impl(const T* const* src, const T* w, int64_t k, T* dst, int64_t n) {
  if (k == 0) {  // every weight was zero
    std::fill(dst, dst + n, T(0));
    return;
  }
  if (k == 1) {
    const T* a = src[0];
    const T wa = w[0];
    if (wa == T(1)) {
      std::memcpy(dst, a, static_cast<size_t>(n) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i];
    return;
  }
  const T *a = src[0], *b = src[1];
  const T wa = w[0], wb = w[1];
  for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i] + wb * b[i];
  for (int64_t j = 2; j < k; ++j) {
    const T* c = src[j];
    const T wc = w[j];
    for (int64_t i = 0; i < n; ++i) dst[i] += wc * c[i];
  }
}

template <class T>
static inline void cols_impl(const T* src, const int64_t* start, const int64_t* idx, const T* w, T* dst, int64_t n_out) {
  for (int64_t o = 0; o < n_out; ++o) {
    const int64_t b = start[o], e = start[o + 1];
    if (b == e) {  // every weight was zero
      dst[o] = T(0);
      continue;
    }
    T acc = w[b] * src[idx[b]];
    for (int64_t k = b + 1; k < e; ++k) acc += w[k] * src[idx[k]];
    dst[o] = acc;
  }
}

// The same sums as cols_impl for one or two taps (a, then a + b), in a loop that vectorises.
template <class T>
static inline void pairs_impl(const T* __restrict src, const int32_t* __restrict i0, const int32_t* __restrict i1,
                              const T* __restrict w0, const T* __restrict w1, T* __restrict dst, int64_t n_out) {
  // __restrict: without it GCC cannot version a loop with gathers for aliasing, and keeps it scalar
  for (int64_t o = 0; o < n_out; ++o) {
    const T a = w0[o] * src[i0[o]], ab = a + w1[o] * src[i1[o]];
    dst[o] = w1[o] != T(0) ? ab : a;
  }
}

// The clones pick the host's widest ISA at run time (the module builds for baseline x86-64;
// core/isa_clones.hpp).
OPFORGE_ISA_CLONES(, "avx512f", resample_rows, rows_impl,
                   (const float* const* src, const float* w, int64_t k, float* dst, int64_t n), (src, w, k, dst, n))
OPFORGE_ISA_CLONES(, "avx512f", resample_rows, rows_impl,
                   (const double* const* src, const double* w, int64_t k, double* dst, int64_t n), (src, w, k, dst, n))
OPFORGE_ISA_CLONES(, "avx512f", resample_cols, cols_impl,
                   (const float* src, const int64_t* start, const int64_t* idx, const float* w, float* dst,
                    int64_t n_out),
                   (src, start, idx, w, dst, n_out))
OPFORGE_ISA_CLONES(, "avx512f", resample_cols, cols_impl,
                   (const double* src, const int64_t* start, const int64_t* idx, const double* w, double* dst,
                    int64_t n_out),
                   (src, start, idx, w, dst, n_out))
OPFORGE_ISA_CLONES(, "avx512f", resample_pairs, pairs_impl,
                   (const float* src, const int32_t* i0, const int32_t* i1, const float* w0, const float* w1,
                    float* dst, int64_t n_out),
                   (src, i0, i1, w0, w1, dst, n_out))
OPFORGE_ISA_CLONES(, "avx512f", resample_pairs, pairs_impl,
                   (const double* src, const int32_t* i0, const int32_t* i1, const double* w0, const double* w1,
                    double* dst, int64_t n_out),
                   (src, i0, i1, w0, w1, dst, n_out))

template <class T> void PlaneResampler<T>::cols(const T* src, T* dst) const {
  if (cols_.pairs)
    resample_pairs(src, cols_.i0.data(), cols_.i1.data(), cols_.w0.data(), cols_.w1.data(), dst, cols_.n_out);
  else
    resample_cols(src, cols_.start.data(), cols_.idx.data(), cols_.w.data(), dst, cols_.n_out);
}

template <class T>
PlaneResampler<T>::PlaneResampler(int64_t planes, ResampleTaps<T> rows, ResampleTaps<T> cols, int max_threads)
    : planes_(planes), rows_(std::move(rows)), cols_(std::move(cols)), max_threads_(std::max(1, max_threads)) {
  // Fewer planes than threads: split each plane's output rows so every thread has work (a block
  // recomputes the one or two source rows it shares with its neighbour).
  const int64_t want_units = 2 * static_cast<int64_t>(max_threads_);
  blocks_ = planes_ >= want_units ? 1 : std::min<int64_t>(rows_.n_out, (want_units + planes_ - 1) / planes_);
  blocks_ = std::max<int64_t>(1, blocks_);
  block_rows_ = (rows_.n_out + blocks_ - 1) / blocks_;
  blocks_ = rows_.n_out == 0 ? 1 : (rows_.n_out + block_rows_ - 1) / block_rows_;
  // The widest source-row span any block reads: that many W-resampled rows per thread.
  for (int64_t b = 0; b < blocks_ && !cols_.identity; ++b) {
    const int64_t o0 = b * block_rows_, o1 = std::min(rows_.n_out, o0 + block_rows_);
    if (o0 >= o1 || rows_.start[o0] == rows_.start[o1]) continue;
    const int64_t lo = *std::min_element(rows_.idx.begin() + rows_.start[o0], rows_.idx.begin() + rows_.start[o1]);
    const int64_t hi = *std::max_element(rows_.idx.begin() + rows_.start[o0], rows_.idx.begin() + rows_.start[o1]);
    buf_rows_ = std::max(buf_rows_, hi - lo + 1);
  }
  for (int64_t o = 0; o < rows_.n_out; ++o) max_row_taps_ = std::max(max_row_taps_, rows_.start[o + 1] - rows_.start[o]);
  scratch_bytes_ = static_cast<size_t>(max_threads_) * static_cast<size_t>(buf_rows_ * cols_.n_out) * sizeof(T);
}

template <class T> void PlaneResampler<T>::run_unit(const T* x, T* y, int64_t unit, T* buf) const {
  const int64_t p = unit / blocks_, b = unit % blocks_;
  const int64_t w_in = cols_.n_in, w_out = cols_.n_out;
  const T* xp = x + p * rows_.n_in * w_in;
  T* yp = y + p * rows_.n_out * w_out;
  const int64_t o0 = b * block_rows_, o1 = std::min(rows_.n_out, o0 + block_rows_);
  if (o0 >= o1) return;
  if (rows_.identity) {  // only W is resized: straight into the output
    for (int64_t o = o0; o < o1; ++o)
      cols(xp + o * w_in, yp + o * w_out);
    return;
  }
  // The source rows [lo, hi] this block reads, resampled along W once each (unless W is kept).
  int64_t lo = 0;
  if (!cols_.identity && rows_.start[o0] != rows_.start[o1]) {
    const auto first = rows_.idx.begin() + rows_.start[o0], last = rows_.idx.begin() + rows_.start[o1];
    lo = *std::min_element(first, last);
    const int64_t hi = *std::max_element(first, last);
    for (int64_t r = lo; r <= hi; ++r)
      cols(xp + r * w_in, buf + (r - lo) * w_out);
  }
  std::vector<const T*> src(static_cast<size_t>(std::max<int64_t>(1, max_row_taps_)));
  for (int64_t o = o0; o < o1; ++o) {
    const int64_t s = rows_.start[o], k = rows_.start[o + 1] - s;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t r = rows_.idx[s + j];
      src[j] = cols_.identity ? xp + r * w_in : buf + (r - lo) * w_out;
    }
    resample_rows(src.data(), rows_.w.data() + s, k, yp + o * w_out, w_out);
  }
}

template <class T> void PlaneResampler<T>::run(const T* x, T* y, int threads, void* scratch) const {
  const int64_t units = planes_ * blocks_;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({static_cast<int64_t>(threads),
                                                                         static_cast<int64_t>(max_threads_), units})));
  T* bufs = static_cast<T*>(scratch);
  const int64_t per_thread = buf_rows_ * cols_.n_out;
  if (nt == 1) {
    for (int64_t u = 0; u < units; ++u) run_unit(x, y, u, bufs);
    return;
  }
  // one buffer a slot (a thread of the OpenMP team, a TBB task): each slot runs once at a time
  parallel_slots(nt, [&](int slot, int slots) {
    const int64_t chunk = (units + slots - 1) / slots;
    const int64_t b = std::min<int64_t>(units, chunk * slot), e = std::min<int64_t>(units, b + chunk);
    for (int64_t u = b; u < e; ++u) run_unit(x, y, u, bufs + slot * per_thread);
  });
}

// One row of a channels-last tensor resampled along W: dst[o, :] = sum_k w[k] * src[idx[k], :]
// for o's taps (channels contiguous, so the inner loop is a vector FMA over C).
static inline __attribute__((always_inline)) void cl_cols_loop(const float* __restrict src, const int64_t* start,
                                                              const int64_t* idx, const float* w,
                                                              float* __restrict dst, int64_t n_out, int64_t c) {
  for (int64_t o = 0; o < n_out; ++o) {
    float* d = dst + o * c;
    const int64_t b = start[o], e = start[o + 1];
    if (b == e) {  // every weight was zero
      std::fill(d, d + c, 0.0f);
      continue;
    }
    const float* s0 = src + idx[b] * c;
    const float w0 = w[b];
    if (e - b == 2) {  // bilinear: a, then a + b, as the pair loop of the planes
      const float* s1 = src + idx[b + 1] * c;
      const float w1 = w[b + 1];
      for (int64_t i = 0; i < c; ++i) {
        const float a = w0 * s0[i];
        d[i] = a + w1 * s1[i];
      }
      continue;
    }
    for (int64_t i = 0; i < c; ++i) d[i] = w0 * s0[i];
    for (int64_t k = b + 1; k < e; ++k) {
      const float* sk = src + idx[k] * c;
      const float wk = w[k];
      for (int64_t i = 0; i < c; ++i) d[i] += wk * sk[i];
    }
  }
}
OPFORGE_ISA_CLONES(static, "avx512f", cl_cols, cl_cols_loop,
                   (const float* __restrict src, const int64_t* start, const int64_t* idx, const float* w,
                    float* __restrict dst, int64_t n_out, int64_t c),
                   (src, start, idx, w, dst, n_out, c))

ChannelsLastResampler::ChannelsLastResampler(int64_t batch, int64_t channels, ResampleTaps<float> rows,
                                             ResampleTaps<float> cols, int max_threads)
    : batch_(batch), channels_(channels), rows_(std::move(rows)), cols_(std::move(cols)),
      max_threads_(std::max(1, max_threads)) {
  // Blocks of at most 8 output rows (the W-resampled source rows of a block stay in cache), and
  // at least two blocks per thread.
  const int64_t want_units = 2 * static_cast<int64_t>(max_threads_);
  blocks_ = std::max<int64_t>((rows_.n_out + 7) / 8, batch_ >= want_units ? 1 : (want_units + batch_ - 1) / batch_);
  blocks_ = std::max<int64_t>(1, std::min<int64_t>(blocks_, rows_.n_out));
  block_rows_ = rows_.n_out == 0 ? 1 : (rows_.n_out + blocks_ - 1) / blocks_;
  blocks_ = rows_.n_out == 0 ? 1 : (rows_.n_out + block_rows_ - 1) / block_rows_;
  for (int64_t b = 0; b < blocks_ && !cols_.identity; ++b) {
    const int64_t o0 = b * block_rows_, o1 = std::min(rows_.n_out, o0 + block_rows_);
    if (o0 >= o1 || rows_.start[o0] == rows_.start[o1]) continue;
    const int64_t lo = *std::min_element(rows_.idx.begin() + rows_.start[o0], rows_.idx.begin() + rows_.start[o1]);
    const int64_t hi = *std::max_element(rows_.idx.begin() + rows_.start[o0], rows_.idx.begin() + rows_.start[o1]);
    buf_rows_ = std::max(buf_rows_, hi - lo + 1);
  }
  for (int64_t o = 0; o < rows_.n_out; ++o) max_row_taps_ = std::max(max_row_taps_, rows_.start[o + 1] - rows_.start[o]);
  // (+ one source row and one output row in f32, for run_bf16)
  per_thread_ = buf_rows_ * cols_.n_out * channels_ + (cols_.n_in + cols_.n_out) * channels_;
  scratch_bytes_ = static_cast<size_t>(max_threads_) * static_cast<size_t>(per_thread_) * sizeof(float);
}

namespace {

}  // namespace

void ChannelsLastResampler::cols(const float* src, float* dst) const {
  cl_cols(src, cols_.start.data(), cols_.idx.data(), cols_.w.data(), dst, cols_.n_out, channels_);
}

template <class In, class Out>
void ChannelsLastResampler::run_unit(const In* x, Out* y, int64_t unit, float* buf) const {
  const int64_t n = unit / blocks_, b = unit % blocks_;
  const int64_t row_in = cols_.n_in * channels_, row_out = cols_.n_out * channels_;
  const In* xp = x + n * rows_.n_in * row_in;
  Out* yp = y + n * rows_.n_out * row_out;
  const int64_t o0 = b * block_rows_, o1 = std::min(rows_.n_out, o0 + block_rows_);
  if (o0 >= o1) return;
  // bf16 ends: a source row widened into f32 scratch before its W pass, an output row summed in
  // f32 scratch and narrowed into the destination
  float* in_f32 = buf + buf_rows_ * row_out;
  float* out_f32 = in_f32 + row_in;
  auto source_row = [&](int64_t r) -> const float* {
    if constexpr (std::is_same_v<In, float>) {
      return xp + r * row_in;
    } else {
      bf16_row_to_f32(xp + r * row_in, in_f32, row_in);
      return in_f32;
    }
  };
  auto output_row = [&](int64_t o) -> float* {
    if constexpr (std::is_same_v<Out, float>) return yp + o * row_out;
    else return out_f32;
  };
  auto finish_row = [&](int64_t o) {
    if constexpr (!std::is_same_v<Out, float>) f32_row_to_bf16(out_f32, yp + o * row_out, row_out);
  };
  if (rows_.identity) {  // only W is resized: straight into the output
    for (int64_t o = o0; o < o1; ++o) {
      cols(source_row(o), output_row(o));
      finish_row(o);
    }
    return;
  }
  int64_t lo = 0;
  if (!cols_.identity && rows_.start[o0] != rows_.start[o1]) {
    const auto first = rows_.idx.begin() + rows_.start[o0], last = rows_.idx.begin() + rows_.start[o1];
    lo = *std::min_element(first, last);
    const int64_t hi = *std::max_element(first, last);
    for (int64_t r = lo; r <= hi; ++r) cols(source_row(r), buf + (r - lo) * row_out);
  }
  std::vector<const float*> src(static_cast<size_t>(std::max<int64_t>(1, max_row_taps_)));
  for (int64_t o = o0; o < o1; ++o) {
    const int64_t s = rows_.start[o], k = rows_.start[o + 1] - s;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t r = rows_.idx[s + j];
      if constexpr (std::is_same_v<In, float>) src[j] = cols_.identity ? xp + r * row_in : buf + (r - lo) * row_out;
      else src[j] = buf + (r - lo) * row_out;  // (run_bf16 needs W resized)
    }
    resample_rows(src.data(), rows_.w.data() + s, k, output_row(o), row_out);
    finish_row(o);
  }
}

template <class In, class Out>
void ChannelsLastResampler::run_all(const In* x, Out* y, int threads, void* scratch) const {
  const int64_t units = batch_ * blocks_;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({static_cast<int64_t>(threads),
                                                                         static_cast<int64_t>(max_threads_), units})));
  float* bufs = static_cast<float*>(scratch);
  if (nt == 1) {
    for (int64_t u = 0; u < units; ++u) run_unit(x, y, u, bufs);
    return;
  }
  // one buffer a slot (a thread of the OpenMP team, a TBB task): each slot runs once at a time
  parallel_slots(nt, [&](int slot, int slots) {
    const int64_t chunk = (units + slots - 1) / slots;
    const int64_t b = std::min<int64_t>(units, chunk * slot), e = std::min<int64_t>(units, b + chunk);
    for (int64_t u = b; u < e; ++u) run_unit(x, y, u, bufs + slot * per_thread_);
  });
}

void ChannelsLastResampler::run(const float* x, float* y, int threads, void* scratch) const {
  run_all(x, y, threads, scratch);
}

void ChannelsLastResampler::run_bf16(const uint16_t* x, void* y, bool y_bf16, int threads, void* scratch) const {
  if (y_bf16) run_all(x, static_cast<uint16_t*>(y), threads, scratch);
  else run_all(x, static_cast<float*>(y), threads, scratch);
}

template struct ResampleTaps<float>;
template struct ResampleTaps<double>;
template class PlaneResampler<float>;
template class PlaneResampler<double>;

}  // namespace opforge_cpu
