// Separable resampling of the last two axes of a stack of planes (Interpolate on N*C planes of
// H x W): each output row and column reads a few source rows/columns with weights computed once
// when the kernel is built. Per plane, the source rows the output needs are resampled along W
// into a scratch buffer, then every output row is a weighted sum of a few of those rows: a
// contiguous, vectorised loop. Work is split over planes, and over blocks of output rows when
// there are fewer planes than threads.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/kernel.hpp"

namespace opforge_cpu {

// One axis: output o reads in[idx[k]] * w[k] for k in [start[o], start[o + 1]).
template <class T> struct ResampleTaps {
  int64_t n_in = 0, n_out = 0;
  std::vector<int64_t> start, idx;
  std::vector<T> w;
  bool identity = false;  // out[o] = in[o]: the axis is not resized
  // Every output reads one or two inputs (nearest, bilinear, linear upsampling): the same taps as
  // fixed pairs, a second weight of 0 where there is one tap, so the loop over outputs vectorises
  // (gathers); the 0-weight term is dropped by a select, never added (0 * inf would be NaN).
  bool pairs = false;
  std::vector<int32_t> i0, i1;
  std::vector<T> w0, w1;

  // From per-output (source index, weight) lists; weights are rounded to T as the reference does.
  static ResampleTaps from(int64_t n_in, const std::vector<std::vector<std::pair<int64_t, double>>>& taps);
};

void resample_rows(const float* const* src, const float* w, int64_t k, float* dst, int64_t n);
void resample_rows(const double* const* src, const double* w, int64_t k, double* dst, int64_t n);
void resample_cols(const float* src, const int64_t* start, const int64_t* idx, const float* w, float* dst, int64_t n_out);
void resample_pairs(const float* src, const int32_t* i0, const int32_t* i1, const float* w0, const float* w1, float* dst,
                    int64_t n_out);
void resample_pairs(const double* src, const int32_t* i0, const int32_t* i1, const double* w0, const double* w1,
                    double* dst, int64_t n_out);
void resample_cols(const double* src, const int64_t* start, const int64_t* idx, const double* w, double* dst,
                   int64_t n_out);

template <class T> class PlaneResampler {
 public:
  PlaneResampler(int64_t planes, ResampleTaps<T> rows, ResampleTaps<T> cols, int max_threads);
  // The scratch `run` needs (per-request memory of the executor).
  size_t scratch_bytes() const { return scratch_bytes_; }
  void run(const T* x, T* y, int threads, void* scratch) const;

 private:
  void run_unit(const T* x, T* y, int64_t unit, T* buf) const;
  void cols(const T* src, T* dst) const;

  int64_t planes_;
  ResampleTaps<T> rows_, cols_;
  int max_threads_;
  int64_t block_rows_ = 1, blocks_ = 1;  // output rows per work unit, units per plane
  int64_t buf_rows_ = 0;                 // source rows one unit may need
  int64_t max_row_taps_ = 0;             // source rows one output row reads
  size_t scratch_bytes_ = 0;
};

// The same separable resampling of H and W for an f32 tensor in channels-last order (N, H, W, C:
// oneDNN's nhwc, what its convolutions write on AVX-512), so that an Interpolate between two
// convolutions reads and writes their layout instead of a reorder to planes and back. Per block
// of output rows, the source rows it needs are resampled along W once (OW x C, vectorised over
// channels), then each output row is the weighted sum of a few of them (resample_rows over OW*C).
// The sums are those of PlaneResampler, in the same order.
class ChannelsLastResampler {
 public:
  ChannelsLastResampler(int64_t batch, int64_t channels, ResampleTaps<float> rows, ResampleTaps<float> cols,
                        int max_threads);
  size_t scratch_bytes() const { return scratch_bytes_; }
  void run(const float* x, float* y, int threads, void* scratch) const;
  // A bf16 source (bf16 bits) and a bf16 (y_bf16) or f32 destination: a bf16 program's
  // convolutions on either side of a UNet's upsampling. The same f32 sums as `run` on the
  // source's values, each output rounded to bf16 (nearest even) once. Needs W resized
  // (!cols_identity()).
  void run_bf16(const uint16_t* x, void* y, bool y_bf16, int threads, void* scratch) const;
  bool cols_identity() const { return cols_.identity; }

 private:
  template <class In, class Out> void run_unit(const In* x, Out* y, int64_t unit, float* buf) const;
  template <class In, class Out> void run_all(const In* x, Out* y, int threads, void* scratch) const;
  void cols(const float* src, float* dst) const;

  int64_t batch_, channels_;
  ResampleTaps<float> rows_, cols_;
  int max_threads_;
  int64_t block_rows_ = 1, blocks_ = 1, buf_rows_ = 0, max_row_taps_ = 0;
  int64_t per_thread_ = 0;  // floats of scratch per thread: the W-resampled rows, then a bf16 row's f32 copies
  size_t scratch_bytes_ = 0;
};

extern template struct ResampleTaps<float>;
extern template struct ResampleTaps<double>;
extern template class PlaneResampler<float>;
extern template class PlaneResampler<double>;

}  // namespace opforge_cpu
