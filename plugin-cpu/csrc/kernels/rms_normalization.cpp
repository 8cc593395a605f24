// RMSNormalization: y = x / sqrt(mean(x^2) + eps) * scale over the dims from `axis` on, i.e. over
// the rows of x viewed as [rows, cols]. Threads split the rows; within a row both passes are
// contiguous loops the compiler vectorises: the sum of squares keeps kRmsLanes independent partial
// sums (a single running sum is a dependency chain the compiler may not reorder), the second
// pass is a plain multiply. A scale that broadcasts inside the normalised dims is expanded into
// the request's scratch once per run, so the row loop always reads one scale value per column.
#include "kernels/common.hpp"
#include "core/bf16_bits.hpp"
#include "core/dnnl_util.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

constexpr int64_t kRmsLanes = 16;

// Rows [r0, r1) of x/y viewed as [rows, cols]; g holds one scale value per column (`one`: a
// single value). Inlined into the ISA clones below.
template <class T>
static inline __attribute__((always_inline)) void rms_rows(const T* x, const T* g, T* y, int64_t r0, int64_t r1,
                                                    int64_t cols, T eps, bool one) {
  const T n = static_cast<T>(cols);
  for (int64_t r = r0; r < r1; ++r) {
    const T* xp = x + r * cols;
    T* yp = y + r * cols;
    T part[kRmsLanes] = {};
    int64_t i = 0;
    for (; i + kRmsLanes <= cols; i += kRmsLanes)
      for (int64_t l = 0; l < kRmsLanes; ++l) part[l] += xp[i + l] * xp[i + l];
    for (; i < cols; ++i) part[0] += xp[i] * xp[i];
    T sum = 0;
    for (int64_t l = 0; l < kRmsLanes; ++l) sum += part[l];
    const T inv = T(1) / std::sqrt(sum / n + eps);
    if (one) {
      const T f = inv * g[0];
      for (int64_t c = 0; c < cols; ++c) yp[c] = xp[c] * f;
    } else {
      for (int64_t c = 0; c < cols; ++c) yp[c] = xp[c] * inv * g[c];
    }
  }
}

// Vectorised for the host's ISA (the module builds for baseline x86-64; core/isa_clones.hpp).
OPFORGE_ISA_CLONES(, "avx512f", rms_rows_f32, rms_rows,
                   (const float* x, const float* g, float* y, int64_t r0, int64_t r1, int64_t cols, float eps,
                    bool one),
                   (x, g, y, r0, r1, cols, eps, one))
OPFORGE_ISA_CLONES(, "avx512f", rms_rows_f64, rms_rows,
                   (const double* x, const double* g, double* y, int64_t r0, int64_t r1, int64_t cols, double eps,
                    bool one),
                   (x, g, y, r0, r1, cols, eps, one))

// The same rows written in bf16 (under the bf16 hint, where every reader is a bf16 MatMul that
// takes it as it is: emit.py _bf16_norm_output): each row computed in f32 exactly as above, then
// rounded to nearest even once (NaN kept, core/bf16_bits.hpp). Two passes over a row that stays
// in L1, because the element-wise rounding written inline did not vectorise: 24 us a t5_like
// RMSNorm against 7 us for the f32 rows.
void rms_rows_f32_bf16(const float* x, const float* g, uint16_t* y, int64_t r0, int64_t r1, int64_t cols, float eps,
                       bool one) {
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < cols) row.resize(static_cast<size_t>(cols));
  for (int64_t r = r0; r < r1; ++r) {
    rms_rows_f32(x + r * cols, g, row.data(), 0, 1, cols, eps, one);
    f32_row_to_bf16(row.data(), y + r * cols, cols);
  }
}

static inline void rms_rows_of(const float* x, const float* g, float* y, int64_t r0, int64_t r1, int64_t cols,
                        float eps, bool one) {
  rms_rows_f32(x, g, y, r0, r1, cols, eps, one);
}
static inline void rms_rows_of(const double* x, const double* g, double* y, int64_t r0, int64_t r1, int64_t cols,
                        double eps, bool one) {
  rms_rows_f64(x, g, y, r0, r1, cols, eps, one);
}

namespace {
template <class T> class RmsNormKernel : public Kernel {
 public:
  explicit RmsNormKernel(NodeDesc& n) {
    const Shape& s = n.in(0).shape;
    const int64_t r = static_cast<int64_t>(s.size());
    const int64_t axis = normalize_axis(n.attrs.i("axis", -1), r);
    for (int64_t d = 0; d < axis; ++d) rows_ *= s[d];
    for (int64_t d = axis; d < r; ++d) cols_ *= s[d];
    eps_ = n.attrs.f("epsilon", 1e-5);
    // The scale's offset for each column: its shape aligned to the trailing (normalised) dims,
    // stride 0 where it broadcasts. Kept only when it is neither one value per column nor one.
    const Shape& ss = n.in(1).shape;
    const int64_t k = r - axis, lead = k - static_cast<int64_t>(ss.size());
    if (lead < 0) n.fail("the scale has more dims than the normalised ones");
    const int64_t count = numel(ss);
    if (count != cols_ && count != 1) {
      std::vector<int64_t> dims(k), strides(k, 0);
      int64_t stride = 1;
      for (int64_t d = k - 1; d >= 0; --d) {
        dims[d] = s[axis + d];
        const int64_t sd = d >= lead ? ss[d - lead] : 1;
        if (sd != 1 && sd != dims[d]) n.fail("the scale does not broadcast to the normalised dims");
        if (sd != 1) strides[d] = stride;
        stride *= sd;
      }
      offsets_.resize(static_cast<size_t>(cols_));
      for (int64_t c = 0; c < cols_; ++c) {
        int64_t rem = c, off = 0;
        for (int64_t d = k - 1; d >= 0; --d) {
          off += (rem % dims[d]) * strides[d];
          rem /= dims[d];
        }
        offsets_[static_cast<size_t>(c)] = off;
      }
    }
    one_ = count == 1 && cols_ != 1;
    if constexpr (std::is_same_v<T, float>) {
      bf16_out_ = n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
      if (bf16_out_) {
        // plain bf16 rows, "blocked" (not the f32 layout): sized by this descriptor, any reader
        // that is not a bf16 MatMul gets a converting reorder
        n.outputs[0].md = plain_md(DType::bf16, n.outputs[0].shape);
        n.outputs[0].blocked = true;
      }
    }
  }
  // (not in place when writing bf16: a thread's half-size rows would overwrite f32 rows another
  // thread has not read yet)
  int inplace_input(int out) const override { return out == 0 && !bf16_out_ ? 0 : -1; }
  size_t scratch_bytes() const override { return offsets_.empty() ? 0 : offsets_.size() * sizeof(T); }
  std::string impl_name() const override {
    return std::string(offsets_.empty() ? "rms_norm" : "rms_norm_broadcast_scale") + (bf16_out_ ? ":bf16" : "");
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    if (!offsets_.empty()) {
      T* expanded = static_cast<T*>(ctx.scratch);
      for (size_t c = 0; c < offsets_.size(); ++c) expanded[c] = g[offsets_[c]];
      g = expanded;
    }
    const int64_t cols = cols_;
    const T eps = static_cast<T>(eps_);
    const bool one = one_;
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_out_) {
        uint16_t* yb = static_cast<uint16_t*>(out[0].data);
        parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
          rms_rows_f32_bf16(x, g, yb, r0, r1, cols, eps, one);
        }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols_)));
        return;
      }
    }
    parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      rms_rows_of(x, g, y, r0, r1, cols, eps, one);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols_)));
  }

 private:
  int64_t rows_ = 1, cols_ = 1;
  double eps_ = 1e-5;
  bool one_ = false;
  bool bf16_out_ = false;  // the output stored in bf16 (attribute bf16_output)
  std::vector<int64_t> offsets_;  // scale offset per column, when the scale broadcasts inside a row
};
}  // namespace

std::unique_ptr<Kernel> make_rms_normalization(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<RmsNormKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_rms_normalization(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t != DType::f32 && t != DType::f64) return std::string("element type ") + dtype_name(t) + " is not supported (f32, f64)";
  if (n.in(1).dtype != t) return "the scale's element type differs from the data's";
  if (n.in(0).shape.empty()) return "RMSNormalization of a scalar";
  return "";
}

OPFORGE_KERNEL(RMSNormalization, make_rms_normalization, check_rms_normalization);

}  // namespace opforge_cpu
