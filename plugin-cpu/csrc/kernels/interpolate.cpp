// Interpolate-11 (and -4): resize chosen axes by constant sizes or scales after zero padding.
// Every mode is separable: at build time each resized axis gets a sparse weight matrix
// [out, in] computed exactly as the reference does (float32 coordinates, the same clamping and
// rounding). Float data resized over its last two axes only, without pads (NCHW resize in CNNs,
// every mode and coordinate mode), runs the plane resampler (core/resample.cpp: weights in T as
// the reference has them, a vectorised pass per output row, threaded over planes); the rest
// resizes the axes one after another in double precision.
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "core/resample.hpp"
#include "kernels/index_common.hpp"
#include "kernels/interpolate_taps.hpp"

namespace opforge_cpu {

namespace {
struct AxisPlan {
  int64_t axis = 0, n_in = 0, n_out = 0;
  std::vector<std::vector<std::pair<int64_t, double>>> taps;  // by output index
};

float round_half_away(float x) { return std::copysign(std::floor(std::fabs(x) + 0.5f), x); }

std::vector<float> original_coords(const std::string& mode, int64_t n_in, int64_t n_out, float s) {
  std::vector<float> c(n_out);
  const float half = 0.5f;
  for (int64_t i = 0; i < n_out; ++i) {
    const float x = static_cast<float>(i);
    float v;
    if (mode == "half_pixel") v = (x + half) / s - half;
    else if (mode == "pytorch_half_pixel") v = n_out > 1 ? (x + half) / s - half : 0.0f;
    else if (mode == "asymmetric") v = x / s;
    else if (mode == "tf_half_pixel_for_nn") v = (x + half) / s;
    else if (mode == "align_corners") v = n_out == 1 ? 0.0f : x * static_cast<float>(n_in - 1) / static_cast<float>(n_out - 1);
    else throw CompileFailure("unknown coordinate_transformation_mode '" + mode + "'");
    c[i] = v;
  }
  return c;
}

AxisPlan make_plan(const Attrs& a, int64_t axis, int64_t n_in, int64_t n_out, float scale, bool downsample) {
  const std::string mode = a.s("mode");
  const std::string ctm = a.s("coordinate_transformation_mode", "half_pixel");
  AxisPlan p;
  p.axis = axis;
  p.n_in = n_in;
  p.n_out = n_out;
  std::vector<std::vector<double>> w(n_out, std::vector<double>(n_in, 0.0));
  const std::vector<float> c = original_coords(ctm, n_in, n_out, scale);
  auto clampi = [&](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v, 0), n_in - 1); };
  for (int64_t o = 0; o < n_out; ++o) {
    const float x = c[o];
    if (mode == "nearest") {
      const std::string nm = a.s("nearest_mode", "round_prefer_floor");
      float idx;
      if (nm == "round_prefer_floor") idx = (x == std::trunc(x) + 0.5f) ? std::floor(x) : round_half_away(x);
      else if (nm == "round_prefer_ceil") idx = round_half_away(x);
      else if (nm == "floor") idx = std::floor(x);
      else if (nm == "ceil") idx = std::ceil(x);
      else idx = scale < 1 ? std::ceil(x) : std::trunc(x);
      w[o][clampi(static_cast<int64_t>(idx))] = 1.0;
    } else if (mode == "linear_onnx") {
      const float cc = std::min(std::max(x, 0.0f), static_cast<float>(n_in - 1));
      const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(cc), n_in - 1), i1 = std::min<int64_t>(i0 + 1, n_in - 1);
      float d0 = std::fabs(cc - static_cast<float>(i0)), d1 = std::fabs(cc - static_cast<float>(i1));
      if (i0 == i1) d0 = d1 = 0.5f;
      w[o][i0] += d1;
      w[o][i1] += d0;
    } else if (mode == "cubic") {
      const double base = std::floor(x);
      const double s = std::fabs(static_cast<double>(x) - base);
      const double k = a.f("cube_coeff", -0.75);
      const double co[4] = {((k * (s + 1) - 5 * k) * (s + 1) + 8 * k) * (s + 1) - 4 * k,
                            ((k + 2) * s - (k + 3)) * s * s + 1,
                            ((k + 2) * (1 - s) - (k + 3)) * (1 - s) * (1 - s) + 1,
                            ((k * (2 - s) - 5 * k) * (2 - s) + 8 * k) * (2 - s) - 4 * k};
      for (int i = 0; i < 4; ++i) w[o][clampi(static_cast<int64_t>(base) + i - 1)] += co[i];
    } else if (mode == "linear") {
      const bool aa = a.b("antialias", false) && downsample;
      const float stretch = aa ? scale : 1.0f;
      const int64_t radius = scale > 1 ? 2 : static_cast<int64_t>(std::ceil(2.0 / static_cast<double>(stretch)));
      const int64_t center = static_cast<int64_t>(round_half_away(x));
      double total = 0;
      for (int64_t off = -radius; off <= radius; ++off) {
        const int64_t src = center + off;
        if (src < 0 || src >= n_in) continue;
        const float dx = x - static_cast<float>(src);
        const double wt = std::max(0.0, static_cast<double>(1.0f - std::fabs(stretch * dx)));
        w[o][src] += wt;
      }
      for (double v : w[o]) total += v;
      for (double& v : w[o]) v = total != 0 ? v / total : 0.0;
    } else {
      throw CompileFailure("Interpolate mode '" + mode + "' is not supported by the CPU device");
    }
  }
  p.taps.resize(n_out);
  for (int64_t o = 0; o < n_out; ++o)
    for (int64_t i = 0; i < n_in; ++i)
      if (w[o][i] != 0.0) p.taps[o].emplace_back(i, w[o][i]);
  return p;
}

template <class T> class InterpolateKernel : public Kernel {
 public:
  explicit InterpolateKernel(const NodeDesc& n) {
    in_shape_ = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(in_shape_.size());
    std::vector<int64_t> pb = n.attrs.ints("pads_begin", {0}), pe = n.attrs.ints("pads_end", {0});
    pb.resize(rank, 0);
    pe.resize(rank, 0);
    pads_begin_ = pb;
    padded_ = in_shape_;
    for (int64_t i = 0; i < rank; ++i) padded_[i] += pb[i] + pe[i];
    std::vector<int64_t> axes;
    if (n.inputs.size() > 2) axes = n.const_ints(2);
    else for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    const bool sizes_mode = n.attrs.s("shape_calculation_mode") == "sizes";
    std::vector<int64_t> sizes;
    std::vector<float> scales;
    if (sizes_mode) {
      std::vector<int64_t> v = n.const_ints(1);
      for (size_t i = 0; i < axes.size(); ++i) {
        sizes.push_back(v.at(i));
        scales.push_back(static_cast<float>(v[i]) / static_cast<float>(padded_[axes[i]]));
      }
    } else {
      std::vector<double> v = n.const_floats(1);
      for (size_t i = 0; i < axes.size(); ++i) {
        scales.push_back(static_cast<float>(v.at(i)));
        sizes.push_back(static_cast<int64_t>(std::floor(static_cast<float>(padded_[axes[i]]) * scales.back() + 1e-5f)));
      }
    }
    bool downsample = false;
    for (float s : scales) downsample |= s < 1;
    Shape cur = padded_;
    for (size_t i = 0; i < axes.size(); ++i) {
      plans_.push_back(make_plan(n.attrs, axes[i], cur[axes[i]], sizes[i], scales[i], downsample));
      cur[axes[i]] = sizes[i];
    }
    round_ = n.attrs.s("mode") == "linear" && !is_float(n.in(0).dtype);
    if constexpr (std::is_floating_point_v<T>) planes_ = make_planes(n);
  }
  std::string impl_name() const override { return planes_ ? "interpolate_planes" : "interpolate"; }
  size_t scratch_bytes() const override {
    if constexpr (std::is_floating_point_v<T>) return planes_ ? planes_->scratch_bytes() : 0;
    return 0;
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if constexpr (std::is_floating_point_v<T>) {
      if (planes_) {
        planes_->run(in[0].ptr<T>(), out[0].ptr<T>(), ctx.num_threads, ctx.scratch);
        return;
      }
    }
    const T* x = in[0].ptr<T>();
    const int64_t rank = static_cast<int64_t>(in_shape_.size());
    std::vector<double> a(numel(padded_), 0.0), b;
    {
      const Shape ist = strides_of(in_shape_), pst = strides_of(padded_);
      const int64_t n = numel(in_shape_);
      for (int64_t i = 0; i < n; ++i) {
        int64_t r = i, off = 0;
        for (int64_t d = 0; d < rank; ++d) {
          const int64_t c = r / ist[d];
          r %= ist[d];
          off += (c + pads_begin_[d]) * pst[d];
        }
        a[off] = static_cast<double>(x[i]);
      }
    }
    Shape cur = padded_;
    for (const AxisPlan& p : plans_) {
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < p.axis; ++d) outer *= cur[d];
      for (int64_t d = p.axis + 1; d < rank; ++d) inner *= cur[d];
      b.assign(outer * p.n_out * inner, 0.0);
      parallel_range(outer * p.n_out, ctx.num_threads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t o = r / p.n_out, j = r % p.n_out;
          double* dst = b.data() + (o * p.n_out + j) * inner;
          for (const auto& [src, wt] : p.taps[j]) {
            const double* s = a.data() + (o * p.n_in + src) * inner;
            for (int64_t i = 0; i < inner; ++i) dst[i] += wt * s[i];
          }
        }
      }, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner)));
      a.swap(b);
      cur[p.axis] = p.n_out;
    }
    T* y = out[0].ptr<T>();
    const int64_t n = static_cast<int64_t>(a.size());
    for (int64_t i = 0; i < n; ++i) {
      double v = a[i];
      if constexpr (std::is_floating_point_v<T>) {
        y[i] = static_cast<T>(v);
      } else {
        if (round_) v = std::copysign(std::floor(std::fabs(v) + 0.5), v);
        if (std::isnan(v)) v = 0;
        v = std::trunc(v);
        v = std::min<double>(std::max<double>(v, static_cast<double>(std::numeric_limits<T>::lowest())),
                             static_cast<double>(std::numeric_limits<T>::max()));
        y[i] = static_cast<T>(v);
      }
    }
  }

 private:
  static bool is_identity(const AxisPlan& p) {
    if (p.n_in != p.n_out) return false;
    for (int64_t o = 0; o < p.n_out; ++o)
      if (p.taps[o].size() != 1 || p.taps[o][0].first != o || p.taps[o][0].second != 1.0) return false;
    return true;
  }

  // The plane resampler when only the last two axes change (others resized by 1 to themselves)
  // and nothing is padded or empty; else nullptr and the general path runs.
  std::unique_ptr<PlaneResampler<T>> make_planes(const NodeDesc& n) const {
    ResampleTaps<T> taps[2];
    int64_t planes = 0;
    if (!plane_taps(n, taps, planes)) return nullptr;
    return std::make_unique<PlaneResampler<T>>(planes, std::move(taps[0]), std::move(taps[1]), n.num_threads);
  }

 public:
  // The taps of the last two axes (rows, then columns) when only those are resized, nothing is
  // padded or empty; `planes` gets the product of the other dims.
  bool plane_taps(const NodeDesc& n, ResampleTaps<T> (&taps)[2], int64_t& planes) const {
    const int64_t rank = static_cast<int64_t>(in_shape_.size());
    if (rank < 2 || padded_ != in_shape_ || numel(in_shape_) == 0 || numel(n.outputs.at(0).shape) == 0) return false;
    const AxisPlan* axis_plan[2] = {nullptr, nullptr};
    for (const AxisPlan& p : plans_) {
      if (p.axis >= rank - 2 && !axis_plan[p.axis - (rank - 2)]) axis_plan[p.axis - (rank - 2)] = &p;
      else if (!is_identity(p)) return false;  // another axis really resized, or one axis twice
    }
    planes = 1;
    for (int64_t d = 0; d < rank - 2; ++d) planes *= in_shape_[d];
    for (int i = 0; i < 2; ++i) {
      const int64_t len = in_shape_[rank - 2 + i];
      if (axis_plan[i]) {
        taps[i] = ResampleTaps<T>::from(axis_plan[i]->n_in, axis_plan[i]->taps);
      } else {
        std::vector<std::vector<std::pair<int64_t, double>>> same(len);
        for (int64_t o = 0; o < len; ++o) same[o] = {{o, 1.0}};
        taps[i] = ResampleTaps<T>::from(len, same);
      }
    }
    return planes * taps[0].n_out * taps[1].n_out == numel(n.outputs.at(0).shape);
  }

 private:
  Shape in_shape_, padded_;
  std::vector<int64_t> pads_begin_;
  std::vector<AxisPlan> plans_;
  bool round_ = false;
  std::unique_ptr<PlaneResampler<T>> planes_;
};
// An f32 NCHW tensor a convolution wrote channels-last (nhwc) resized over H and W in that
// layout; the output is nhwc too. A UNet decoder's bilinear upsampling between convolutions then
// costs no reorder to planes and back (2.5 ms of reorders per unet_small inference).
// A bf16 program's nhwc bf16 tensor (emit.py: a convolution's bf16 output read by this
// Interpolate) is resized from its bf16 values, into bf16 when the emitter found that only bf16
// readers take the result ("bf16_output"), else into f32: OpenVINO's bf16 Interpolate, without
// the reorder to f32 planes and back.
class ChannelsLastInterpolate : public Kernel {
 public:
  ChannelsLastInterpolate(std::unique_ptr<ChannelsLastResampler> r, bool x_bf16, bool y_bf16)
      : r_(std::move(r)), x_bf16_(x_bf16), y_bf16_(y_bf16) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (x_bf16_) r_->run_bf16(static_cast<const uint16_t*>(in[0].data), out[0].data, y_bf16_, ctx.num_threads, ctx.scratch);
    else r_->run(in[0].ptr<float>(), out[0].ptr<float>(), ctx.num_threads, ctx.scratch);
  }
  size_t scratch_bytes() const override { return r_->scratch_bytes(); }
  std::string impl_name() const override {
    return x_bf16_ ? (y_bf16_ ? "interpolate_nhwc_bf16" : "interpolate_nhwc_bf16_f32") : "interpolate_nhwc";
  }

 private:
  std::unique_ptr<ChannelsLastResampler> r_;
  bool x_bf16_, y_bf16_;
};

dnnl::memory::desc nhwc_md(const Shape& s, dnnl::memory::data_type t = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc(to_dims(s), t, dnnl::memory::format_tag::acdb);
}

// The channels-last kernel when the blocked input is f32 or bf16 nhwc and only H and W are resized.
std::unique_ptr<Kernel> make_channels_last(NodeDesc& n) {
  const TensorInfo& x = n.in(0);
  const Shape& ys = n.outputs.at(0).shape;
  if (x.dtype != DType::f32 || x.shape.size() != 4) return nullptr;
  const bool x_bf16 = x.md == nhwc_md(x.shape, dnnl::memory::data_type::bf16);
  if (!x_bf16 && x.md != nhwc_md(x.shape)) return nullptr;
  NodeDesc plain = n;
  plain.inputs[0].info.blocked = false;
  plain.inputs[0].info.md = dnnl::memory::desc();
  InterpolateKernel<float> planes(plain);
  ResampleTaps<float> taps[2];
  int64_t count = 0;
  if (!planes.plane_taps(plain, taps, count) || x.shape[0] != ys[0] || x.shape[1] != ys[1]) return nullptr;
  auto r = std::make_unique<ChannelsLastResampler>(x.shape[0], x.shape[1], std::move(taps[0]), std::move(taps[1]),
                                                   n.num_threads);
  if (x_bf16 && r->cols_identity()) return nullptr;  // (run_bf16 needs W resized)
  const bool y_bf16 = x_bf16 && n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() &&
                      n.allow_blocked_output[0];
  auto k = std::make_unique<ChannelsLastInterpolate>(std::move(r), x_bf16, y_bf16);
  n.outputs[0].blocked = true;
  n.outputs[0].md = nhwc_md(ys, y_bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32);
  return k;
}
}  // namespace

bool interpolate_plane_taps(const NodeDesc& n, ResampleTaps<float> (&taps)[2], int64_t& planes) {
  NodeDesc plain = n;  // the weights depend on the shapes and attributes only, not on the layout
  plain.inputs[0].info.blocked = false;
  plain.inputs[0].info.md = dnnl::memory::desc();
  return InterpolateKernel<float>(plain).plane_taps(plain, taps, planes);
}

std::unique_ptr<Kernel> make_interpolate(NodeDesc& n) {
  if (n.in(0).blocked) {
    // nhwc f32: resized where it is; any other layout is reordered to plain in scratch first
    if (auto k = make_channels_last(n)) return k;
    return make_plain_inputs_kernel(n, [](NodeDesc& p) { return make_interpolate(p); });
  }
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<InterpolateKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_interpolate(const NodeDesc& n) {
  if (n.version != "opset11") return "Interpolate-" + n.version + " is not supported";
  if (!n.is_const(1) || (n.inputs.size() > 2 && !n.is_const(2)))
    return "Interpolate needs constant sizes/scales and axes on the CPU device";
  const std::string mode = n.attrs.s("mode");
  if (mode != "nearest" && mode != "linear" && mode != "linear_onnx" && mode != "cubic")
    return "Interpolate mode '" + mode + "' is not supported by the CPU device";
  return check_numeric(n);
}

OPFORGE_KERNEL(Interpolate, make_interpolate, check_interpolate).layout_flexible();

}  // namespace opforge_cpu
