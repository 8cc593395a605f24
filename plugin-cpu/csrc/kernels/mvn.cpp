// MVN-6: (x - mean) / sqrt(var + eps) over constant axes. When the fusion pass found the
// LayerNorm pattern (MVN * gamma + beta) it passes gamma and beta as inputs 2 and 3
// ("has_scale"/"has_shift"), applied in the same pass over the row.
#include "kernels/common.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/bf16_bits.hpp"
#include "core/dnnl_util.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

// A post-LN LayerNorm's second output (attribute bf16_copy, emit.py _bf16_norm_copy): its f32
// output again, rounded to bf16 (nearest even, NaN kept) for the next projections' bf16 MatMuls,
// which read it as it is while the residual post-op reads the f32 output. Rows [r0, r1), narrowed
// by f32_row_to_bf16 (vcvtneps2bf16 where the host has it: the per-element rounding loop did not
// vectorise, ~5 us a bert_small LayerNorm).
void layer_norm_bf16_copy(const float* y, uint16_t* c, int64_t r0, int64_t r1, int64_t cols) {
  f32_row_to_bf16(y + r0 * cols, c + r0 * cols, (r1 - r0) * cols);
}

namespace {
// How a LayerNorm fills its second output (bf16_copy): the bf16 rounding where the executor lets
// the output be bf16 (its readers take it as it is), else a plain f32 copy.
enum class Copy { none, bf16, f32 };

Copy copy_mode(NodeDesc& n) {
  if (n.outputs.size() < 2) return Copy::none;
  if (n.in(0).dtype == DType::f32 && n.allow_blocked_output.size() > 1 && n.allow_blocked_output[1]) {
    n.outputs[1].md = plain_md(DType::bf16, n.outputs[1].shape);
    n.outputs[1].blocked = true;
    return Copy::bf16;
  }
  return Copy::f32;
}

void write_copy(RunContext& ctx, Copy mode, const TensorView& y, TensorView& c, int64_t rows, int64_t cols,
                size_t elem) {
  if (mode == Copy::f32) {
    std::memcpy(c.data, y.data, static_cast<size_t>(rows * cols) * elem);
  } else if (mode == Copy::bf16) {
    const float* yp = y.ptr<float>();
    uint16_t* cp = static_cast<uint16_t*>(c.data);
    parallel_range(rows, ctx.num_threads, [&](int64_t r0, int64_t r1) { layer_norm_bf16_copy(yp, cp, r0, r1, cols); },
                   std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)));
  }
}

// MvnKernel takes a row's mean and variance in one pass over it, in blocks of kMvnBlock
// elements: each block sums x - shift and its square in double, 32 lanes of each (four vectors
// of eight on AVX-512: independent chains the compiler keeps in registers; the eight lanes of
// stop 25 were one chain, latency-bound at 136 us for PoolFormer's [1, 1, 200704] row, and two
// passes, sum then squared deviations, read the row twice). The blocks' sums are then added in
// block order: the same sums whichever thread took a block. `shift` is the row's first element:
// with it the one-pass variance E[(x-s)^2] - E[x-s]^2 loses nothing to a large mean (x + 1000
// over a deviation of 2), which it would with s = 0.
constexpr int64_t kMvnBlock = 4096;
constexpr int kMvnLanes = 32;

// sums[k], squares[k] for blocks [k0, k1) of row xp (of `cols` elements).
template <class T>
inline __attribute__((always_inline)) void block_moments_loop(const T* xp, int64_t cols, int64_t k0, int64_t k1,
                                                              double shift, double* sums, double* squares) {
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t i0 = k * kMvnBlock, i1 = std::min(cols, i0 + kMvnBlock);
    double s[kMvnLanes], q[kMvnLanes];
    for (int j = 0; j < kMvnLanes; ++j) s[j] = q[j] = 0;
    int64_t i = i0;
    for (; i + kMvnLanes <= i1; i += kMvnLanes)
      for (int j = 0; j < kMvnLanes; ++j) {
        const double d = static_cast<double>(xp[i + j]) - shift;
        s[j] += d;
        q[j] += d * d;
      }
    for (int j = 0; i < i1; ++i, ++j) {  // the tail, into the first lanes
      const double d = static_cast<double>(xp[i]) - shift;
      s[j] += d;
      q[j] += d * d;
    }
    // lanes added pairwise in a fixed order
    for (int w = kMvnLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) {
        s[j] += s[j + w];
        q[j] += q[j + w];
      }
    sums[k] = s[0];
    squares[k] = q[0];
  }
}
// (f32 rows: built per ISA, picked at run time, core/isa_clones.hpp)
OPFORGE_ISA_CLONES(static, "avx512f", block_moments_f32, block_moments_loop<float>,
                   (const float* xp, int64_t cols, int64_t k0, int64_t k1, double shift, double* sums,
                    double* squares),
                   (xp, cols, k0, k1, shift, sums, squares))

template <class T> class MvnKernel : public Kernel {
 public:
  explicit MvnKernel(NodeDesc& n) {
    const Shape& s = n.in(0).shape;
    const int64_t r = static_cast<int64_t>(s.size());
    std::vector<bool> red(r, false);
    for (auto a : n.const_ints(1)) red[normalize_axis(a, r)] = true;
    // Rows are the kept (leading) dims; the reduced axes must be the trailing ones, which is
    // what every MVN/LayerNorm in practice uses; others are handled as a permuted view below.
    int64_t first = r;
    for (int64_t i = r - 1; i >= 0 && red[i]; --i) first = i;
    for (int64_t i = 0; i < first; ++i)
      if (red[i]) throw CompileFailure("MVN over non-trailing axes is not supported by the CPU device");
    rows_ = 1;
    for (int64_t i = 0; i < first; ++i) rows_ *= s[i];
    cols_ = 1;
    for (int64_t i = first; i < r; ++i) cols_ *= s[i];
    norm_var_ = n.attrs.b("normalize_variance", true);
    eps_ = n.attrs.f("eps", 1e-9);
    inside_ = n.attrs.s("eps_mode", "inside_sqrt") == "inside_sqrt";
    has_scale_ = n.attrs.b("has_scale", false);
    has_shift_ = n.attrs.b("has_shift", false);
    if (has_scale_) scale_ = n.inputs[2].info.shape.empty() ? 1 : numel(n.inputs[2].info.shape);
    if (has_shift_) shift_ = n.inputs[3].info.shape.empty() ? 1 : numel(n.inputs[3].info.shape);
    if ((has_scale_ && scale_ != 1 && scale_ != cols_) || (has_shift_ && shift_ != 1 && shift_ != cols_))
      throw CompileFailure("fused LayerNorm scale/shift must cover the normalised axes");
    copy_ = copy_mode(n);
    if (copy_ == Copy::bf16 && !std::is_same_v<T, float>) throw CompileFailure("a bf16 copy of a non-f32 LayerNorm");
  }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  std::string impl_name() const override { return has_scale_ || has_shift_ ? "layer_norm" : "mvn"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const T* g = has_scale_ ? in[2].ptr<T>() : nullptr;
    const T* b = has_shift_ ? in[3].ptr<T>() : nullptr;
    const int64_t cols = cols_;
    const int64_t blocks = (cols + kMvnBlock - 1) / kMvnBlock;
    auto normalize = [&](const T* xp, T* yp, int64_t i0, int64_t i1, T m, T s) {
      if (scale_ <= 1 && shift_ <= 1) {
        // no or one-value gamma and beta (an InstanceNormalization of one channel): straight
        // loops the compiler vectorises, the same operations in the same order as below
        const T gv = g ? g[0] : T(1), bv = b ? b[0] : T(0);
        if (g && b) {
          for (int64_t i = i0; i < i1; ++i) yp[i] = (xp[i] - m) * s * gv + bv;
        } else if (g) {
          for (int64_t i = i0; i < i1; ++i) yp[i] = (xp[i] - m) * s * gv;
        } else if (b) {
          for (int64_t i = i0; i < i1; ++i) yp[i] = (xp[i] - m) * s + bv;
        } else {
          for (int64_t i = i0; i < i1; ++i) yp[i] = (xp[i] - m) * s;
        }
        return;
      }
      for (int64_t i = i0; i < i1; ++i) {
        T v = (xp[i] - m) * s;
        if (g) v *= g[scale_ == 1 ? 0 : i];
        if (b) v += b[shift_ == 1 ? 0 : i];
        yp[i] = v;
      }
    };
    if (rows_ >= ctx.num_threads || blocks == 1) {
      // a row a thread
      parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
        std::vector<double> sums(static_cast<size_t>(blocks)), squares(static_cast<size_t>(blocks));
        for (int64_t r = r0; r < r1; ++r) {
          const T* xp = x + r * cols;
          const double shift = row_shift(xp);
          block_moments(xp, cols, 0, blocks, shift, sums.data(), squares.data());
          const auto [mean, s] = statistics(shift, sums, squares);
          normalize(xp, y + r * cols, 0, cols, mean, s);
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols_)));
    } else {
      // fewer rows than threads (PoolFormer's GroupNorm(1 group) as an InstanceNormalization of
      // one channel: one row of 25k-200k values, which ran on one thread): each row's blocks
      // shared among the threads, their sums added in block order as above, so the result does
      // not depend on the thread count
      std::vector<double> sums(static_cast<size_t>(blocks)), squares(static_cast<size_t>(blocks));
      for (int64_t r = 0; r < rows_; ++r) {
        const T* xp = x + r * cols;
        const double shift = row_shift(xp);
        parallel_range(blocks, ctx.num_threads, [&](int64_t k0, int64_t k1) {
          block_moments(xp, cols, k0, k1, shift, sums.data(), squares.data());
        }, 1);
        const auto [m, s] = statistics(shift, sums, squares);
        parallel_range(blocks, ctx.num_threads, [&](int64_t k0, int64_t k1) {
          normalize(xp, y + r * cols, k0 * kMvnBlock, std::min(cols, k1 * kMvnBlock), m, s);
        }, 1);
      }
    }
    write_copy(ctx, copy_, out[0], out[1], rows_, cols_, sizeof(T));
  }

 private:
  static void block_moments(const T* xp, int64_t cols, int64_t k0, int64_t k1, double shift, double* sums,
                            double* squares) {
    if constexpr (std::is_same_v<T, float>) block_moments_f32(xp, cols, k0, k1, shift, sums, squares);
    else block_moments_loop(xp, cols, k0, k1, shift, sums, squares);
  }
  // The row's first element, or 0 where it is not finite (an infinite shift would turn every
  // finite x - shift into inf and the mean into NaN; the row's NaN/inf still reach the sums)
  static double row_shift(const T* xp) {
    const double v = static_cast<double>(xp[0]);
    return std::isfinite(v) ? v : 0.0;
  }
  // (mean, 1 / std) of a row from its blocks' sums, added in block order
  std::pair<T, T> statistics(double shift, const std::vector<double>& sums, const std::vector<double>& squares) const {
    double sum = 0, sq = 0;
    for (double v : sums) sum += v;
    for (double v : squares) sq += v;
    const double d = sum / cols_;  // mean - shift
    const T mean = static_cast<T>(shift + d);
    if (!norm_var_) return {mean, T(1)};
    // (rounding can take E[(x-s)^2] - E[x-s]^2 a hair below 0 for a constant row; NaN stays NaN)
    double var = sq / cols_ - d * d;
    if (var < 0) var = 0;
    const double inv = inside_ ? 1.0 / std::sqrt(var + eps_) : 1.0 / (std::sqrt(var) + eps_);
    return {mean, static_cast<T>(inv)};
  }

  Copy copy_ = Copy::none;
  int64_t rows_ = 1, cols_ = 1, scale_ = 0, shift_ = 0;
  bool norm_var_ = true, inside_ = true, has_scale_ = false, has_shift_ = false;
  double eps_ = 1e-9;
};

// MVN over any set of axes (ONNX MeanVarianceNormalization's default [0, 2, 3] of NCHW): each
// group of the kept axes gathers its elements through precomputed offsets. No fused scale/shift
// (the LayerNorm fusion only forms trailing-axis MVNs).
template <class T> class MvnAnyAxesKernel : public Kernel {
 public:
  MvnAnyAxesKernel(const NodeDesc& n, const std::vector<bool>& red) {
    const Shape& s = n.in(0).shape;
    const Shape st = strides_of(s);
    base_ = {0};
    offs_ = {0};
    for (size_t d = 0; d < s.size(); ++d) {
      auto& v = red[d] ? offs_ : base_;
      std::vector<int64_t> next;
      next.reserve(v.size() * s[d]);
      for (int64_t o : v)
        for (int64_t i = 0; i < s[d]; ++i) next.push_back(o + i * st[d]);
      v.swap(next);
    }
    norm_var_ = n.attrs.b("normalize_variance", true);
    eps_ = n.attrs.f("eps", 1e-9);
    inside_ = n.attrs.s("eps_mode", "inside_sqrt") == "inside_sqrt";
  }
  std::string impl_name() const override { return "mvn_axes"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const double cols = static_cast<double>(offs_.size());
    parallel_range(static_cast<int64_t>(base_.size()), ctx.num_threads, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t b = base_[g];
        double sum = 0;
        for (int64_t o : offs_) sum += x[b + o];
        const double mean = sum / cols;
        double inv = 1.0;
        if (norm_var_) {
          double sq = 0;
          for (int64_t o : offs_) {
            const double d = x[b + o] - mean;
            sq += d * d;
          }
          const double var = sq / cols;
          inv = inside_ ? 1.0 / std::sqrt(var + eps_) : 1.0 / (std::sqrt(var) + eps_);
        }
        const T m = static_cast<T>(mean), sc = static_cast<T>(inv);
        for (int64_t o : offs_) y[b + o] = (x[b + o] - m) * sc;
      }
    }, 1);
  }

 private:
  std::vector<int64_t> base_, offs_;  // element offsets of each kept group, and within a group
  bool norm_var_ = true, inside_ = true;
  double eps_ = 1e-9;
};

std::vector<bool> reduced_axes(const NodeDesc& n) {
  const int64_t r = static_cast<int64_t>(n.in(0).shape.size());
  std::vector<bool> red(r, false);
  for (auto a : n.const_ints(1)) red[normalize_axis(a, r)] = true;
  return red;
}

bool trailing(const std::vector<bool>& red) {
  bool seen = false;
  for (bool v : red) {
    if (v) seen = true;
    else if (seen) return false;
  }
  return true;
}

// f32 LayerNorm over the trailing axes (inside_sqrt, per-column or no gamma/beta): oneDNN's
// layer_normalization primitive (vectorised; the hand-written loop above is scalar). Under the
// bf16 hint, where every reader takes bf16 as it is (emit.py _bf16_norm_output: the next
// projections' bf16 MatMuls, a residual post-op), the destination is bf16: f32 statistics and
// arithmetic, the output rounded to nearest even once (NaN kept), as OpenVINO's bf16 LayerNorm.
// The projections then read it without converting an f32 copy first.
class DnnlLayerNorm : public DnnlKernel {
 public:
  DnnlLayerNorm(const NodeDesc& n, int64_t rows, int64_t cols, bool scale, bool shift, bool bf16_dst) {
    dnnl::memory::desc md({rows, cols}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    dnnl::memory::desc dmd({rows, cols}, bf16_dst ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32,
                           dnnl::memory::format_tag::ab);
    auto flags = dnnl::normalization_flags::none;
    if (scale) flags = flags | dnnl::normalization_flags::use_scale;
    if (shift) flags = flags | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, md, dmd,
                                                         static_cast<float>(n.attrs.f("eps", 1e-9)), flags,
                                                         default_attr());
    const char* impl = pd.impl_info_str();
    if (bf16_dst && (impl == nullptr || std::string(impl).rfind("ref", 0) == 0))
      throw dnnl::error(dnnl_unimplemented, "no fast bf16-destination layer normalization");  // f32 then
    set_primitive(dnnl::layer_normalization_forward(pd), pd);
    dnnl::memory::desc cmd({cols}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    arg_input(DNNL_ARG_SRC, 0, md);
    if (scale) arg_input(DNNL_ARG_SCALE, 2, cmd);
    if (shift) arg_input(DNNL_ARG_SHIFT, 3, cmd);
    arg_output(DNNL_ARG_DST, 0, dmd);
    bf16_dst_ = bf16_dst;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    DnnlKernel::run(ctx, in, out, bound);
    if (copy_ != Copy::none) {
      ctx.stream->wait();
      write_copy(ctx, copy_, out[0], out[1], rows_, cols_, sizeof(float));
    }
  }
  // (a bf16 destination is half the source's size: written over it, a thread's rows would land
  // on f32 rows another thread has not read yet)
  int inplace_input(int out) const override { return out == 0 && !bf16_dst_ ? 0 : -1; }
  Copy copy_ = Copy::none;
  int64_t rows_ = 1, cols_ = 1;
  std::string impl_name() const override {
    return std::string(bf16_dst_ ? "layer_norm:bf16:" : copy_ == Copy::bf16 ? "layer_norm:bf16_copy:" : "layer_norm:") +
           DnnlKernel::impl_name();
  }

 private:
  bool bf16_dst_ = false;
};

std::unique_ptr<Kernel> try_dnnl_layer_norm(NodeDesc& n) {
  if (n.in(0).dtype != DType::f32 || n.in(0).blocked) return nullptr;
  if (!n.attrs.b("normalize_variance", true) || n.attrs.s("eps_mode", "inside_sqrt") != "inside_sqrt") return nullptr;
  const Shape& s = n.in(0).shape;
  const int64_t r = static_cast<int64_t>(s.size());
  if (r == 0) return nullptr;
  std::vector<bool> red(r, false);
  for (auto a : n.const_ints(1)) red[normalize_axis(a, r)] = true;
  int64_t first = r;
  for (int64_t i = r - 1; i >= 0 && red[i]; --i) first = i;
  if (first == r) return nullptr;
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < first; ++i) rows *= s[i];
  for (int64_t i = first; i < r; ++i) cols *= s[i];
  if (rows < 1 || cols < 2) return nullptr;
  const bool scale = n.attrs.b("has_scale", false), shift = n.attrs.b("has_shift", false);
  auto covers = [&](int i) {
    const auto& sh = n.inputs[i].info.shape;
    return n.inputs[i].info.dtype == DType::f32 && !sh.empty() && numel(sh) == cols;
  };
  if ((scale && !covers(2)) || (shift && !covers(3))) return nullptr;
  const bool bf16_dst = n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() &&
                        n.allow_blocked_output[0];
  if (bf16_dst && n.outputs.size() == 1) {
    try {
      auto k = std::make_unique<DnnlLayerNorm>(n, rows, cols, scale, shift, true);
      // the plain bf16 rows; "blocked" (not the f32 plain layout): sized by this descriptor, and a
      // reader that is no bf16 MatMul would get a converting reorder
      n.outputs[0].md = plain_md(DType::bf16, n.outputs[0].shape);
      n.outputs[0].blocked = true;
      return k;
    } catch (const dnnl::error&) {
      // no bf16 destination here: the f32 one below
    }
  }
  try {
    auto k = std::make_unique<DnnlLayerNorm>(n, rows, cols, scale, shift, false);
    k->copy_ = copy_mode(n);
    k->rows_ = rows;
    k->cols_ = cols;
    return k;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}
}  // namespace

std::unique_ptr<Kernel> make_mvn(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  const auto red = reduced_axes(n);
  if (!trailing(red)) {
    if (n.outputs.size() > 1) throw CompileFailure("a LayerNorm's bf16 copy needs MVN over trailing axes");
    if (n.attrs.b("has_scale", false) || n.attrs.b("has_shift", false))
      throw CompileFailure("a fused scale/shift needs MVN over trailing axes");
    dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<MvnAnyAxesKernel<OPF_TYPE_OF(tag)>>(n, red); });
    return k;
  }
  if (auto dk = try_dnnl_layer_norm(n)) return dk;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<MvnKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_mvn(const NodeDesc& n) {
  if (!n.is_const(1)) return "MVN needs constant axes on the CPU device";
  if (n.in(0).dtype != DType::f32 && n.in(0).dtype != DType::f64) return "MVN runs in f32/f64 only";
  const int64_t r = static_cast<int64_t>(n.in(0).shape.size());
  std::vector<bool> red(r, false);
  for (auto a : n.const_ints(1)) {
    int64_t x = a < 0 ? a + r : a;
    if (x < 0 || x >= r) return "MVN axis out of range";
    red[x] = true;
  }
  if (!trailing(red) && (n.attrs.b("has_scale", false) || n.attrs.b("has_shift", false)))
    return "a fused scale/shift needs MVN over trailing axes";
  return "";
}

OPFORGE_KERNEL(MVN, make_mvn, check_mvn);

}  // namespace opforge_cpu
