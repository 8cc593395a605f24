// IntegerConvolution (opforge_cpu/ops/integer_convolution.py, made by passes/int8/dynamic.py):
// ONNX's ConvInteger (quantize_dynamic's convolutions: Whisper's Conv1d stem, a ViT's patch
// embedding, wav2vec2's grouped positional Conv1d) of a u8/s8 source [N, C, spatial...] (1-D or
// 2-D, `group` groups) minus a per-tensor zero point known at run time, and constant
// zero-point-centred s8 filters [O, C/group, k...], with the exact i32 sums as output
// [N, O, out...]. A grouped convolution runs one product per group over the same buffers (the
// pass keeps depthwise-like ones, with few filters per group, on the exact loop).
//
// How: each output pixel's window is copied into a row of an [N*P, C*k] u8/s8 matrix (im2col),
// cells in the padding holding the zero point itself, so every row reads C*k real-or-zero-point
// values and the zero point's share of every sum is the same zp * sum(w[o]) (ConvInteger pads the
// centred source with zeros, i.e. the raw one with the zero point); then oneDNN's raw int8 matmul
// with no attributes (integer_mat_mul.cpp says why: exact s32), then acc - zp * wsum[o] in
// wrapping int32, written transposed into [N, O, P]. The exact integer loop (int_conv) took 537
// ms for Whisper-tiny's two stem convolutions at 1 thread.
#include <cstring>
#include <string>

#include "core/elementwise.hpp"
#include "core/nn.hpp"
#include "core/primitive_log.hpp"
#include "kernels/common.hpp"
#include "kernels/integer_conv_common.hpp"

namespace opforge_cpu {

namespace {
struct IntConvBound : Bound {
  std::unordered_map<int, dnnl::memory> args;
  char* cols = nullptr;
  int32_t* acc = nullptr;
};

bool int8_type(DType t) { return t == DType::u8 || t == DType::i8; }

class IntegerConvolutionKernel : public Kernel {
 public:
  explicit IntegerConvolutionKernel(const NodeDesc& n) : w_(n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ws = n.in(1).shape;
    N_ = xs[0];
    C_ = xs[1];
    O_ = ws[0];
    G_ = n.attrs.i("group", 1);
    Cg_ = C_ / G_;
    Og_ = O_ / G_;
    P_ = w_.out[0] * w_.out[1];
    K_ = Cg_ * w_.k[0] * w_.k[1];
    rows_ = N_ * P_;
    // a 1x1 window over every pixel and nothing else: no padding either side (out == in)
    pointwise_ = pointwise_switch() && w_.k[0] == 1 && w_.k[1] == 1 && w_.st[0] == 1 && w_.st[1] == 1 &&
                 w_.pb[0] == 0 && w_.pb[1] == 0 && w_.out[0] == w_.in[0] && w_.out[1] == w_.in[1];
    has_zp_ = n.attrs.b("has_zero_point", false);
    zp_signed_ = has_zp_ && n.in(2).dtype == DType::i8;
    const DType src_type = n.in(0).dtype;
    // one product per group, [N*P, C/G*k] x [C/G*k, O/G], run G times over the same buffers
    const auto src_md = plain_md(src_type, {rows_, K_});
    acc_md_ = plain_md(DType::i32, {rows_, Og_});
    const dnnl::memory::desc w_any({K_, Og_}, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(cpu_engine(), src_md, w_any, acc_md_, default_attr());
    impl_ = pd.impl_info_str() ? pd.impl_info_str() : "onednn";
    note_primitive(pd);
    prim_ = dnnl::matmul(pd);
    src_md_ = src_md;
    scratch_md_ = pd.scratchpad_desc();
    prim_scratch_ = (scratch_md_.get_size() + 63) / 64 * 64;
    cols_bytes_ = (static_cast<size_t>(rows_ * K_) + 63) / 64 * 64;
    acc_bytes_ = (static_cast<size_t>(rows_ * Og_) * 4 + 63) / 64 * 64;
    // each group's filters [O/G, C/G*k] as the matmul's [C/G*k, O/G] weights, and each filter's sum
    const int8_t* w = static_cast<const int8_t*>(n.inputs[1].const_data);
    std::vector<int8_t> wt(static_cast<size_t>(K_ * Og_));
    wsum_.assign(static_cast<size_t>(O_), 0);
    for (int64_t g = 0; g < G_; ++g) {
      for (int64_t o = 0; o < Og_; ++o)
        for (int64_t k = 0; k < K_; ++k) {
          const int8_t v = w[(g * Og_ + o) * K_ + k];
          wt[k * Og_ + o] = v;
          wsum_[g * Og_ + o] += v;
        }
      weights_.push_back(pack_constant(wt.data(), plain_md(DType::i8, {K_, Og_}), pd.weights_desc()));
    }
  }
  std::string impl_name() const override { return (pointwise_ ? "int8_dynamic:im2col_1x1+" : "int8_dynamic:im2col+") + impl_; }
  size_t scratch_bytes() const override { return prim_scratch_ + cols_bytes_ + acc_bytes_; }
  bool packs_input(int i) const override { return i == 1; }
  std::unique_ptr<Bound> bind(const TensorView*, size_t, const TensorView*, size_t, void* scratch) override {
    auto b = std::make_unique<IntConvBound>();
    auto& eng = cpu_engine();
    char* s = static_cast<char*>(scratch);
    b->cols = s + prim_scratch_;
    b->acc = reinterpret_cast<int32_t*>(s + prim_scratch_ + cols_bytes_);
    b->args.emplace(DNNL_ARG_SRC, dnnl::memory(src_md_, eng, b->cols));
    b->args.emplace(DNNL_ARG_WEIGHTS, weights_[0]);  // (each group's in turn: run)
    b->args.emplace(DNNL_ARG_DST, dnnl::memory(acc_md_, eng, b->acc));
    if (prim_scratch_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, s));
    return b;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* b = static_cast<IntConvBound*>(bound);
    int32_t zp = 0;
    if (has_zp_)
      zp = zp_signed_ ? static_cast<int32_t>(*in[2].ptr<int8_t>()) : static_cast<int32_t>(*in[2].ptr<uint8_t>());
    for (int64_t g = 0; g < G_; ++g) {
      im2col(ctx, static_cast<const uint8_t*>(in[0].data), reinterpret_cast<uint8_t*>(b->cols), static_cast<uint8_t>(zp),
             g * Cg_);
      b->args[DNNL_ARG_WEIGHTS] = weights_[g];
      prim_.execute(*ctx.stream, b->args);
      ctx.stream->wait();
      write_back(ctx, b->acc, out[0].ptr<int32_t>(), static_cast<uint32_t>(zp), g * Og_);
    }
  }

 private:
  // acc [N*P, O/G] -> channels [o0, o0 + O/G) of y [N, O, P], less the zero point's share;
  // blocks of 64 pixels so the transposed reads stay in cache
  void write_back(RunContext& ctx, const int32_t* acc, int32_t* y, uint32_t uzp, int64_t o0) const {
    const int64_t blocks = (P_ + 63) / 64;
    parallel_range(N_ * blocks, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / blocks, p0 = r % blocks * 64, p1 = std::min(P_, p0 + 64);
        for (int64_t o = 0; o < Og_; ++o) {
          const uint32_t share = uzp * static_cast<uint32_t>(wsum_[o0 + o]);
          int32_t* yo = y + (img * O_ + o0 + o) * P_;
          const int32_t* a = acc + img * P_ * Og_ + o;
          for (int64_t p = p0; p < p1; ++p) yo[p] = static_cast<int32_t>(static_cast<uint32_t>(a[p * Og_]) - share);
        }
      }
    }, 1);
  }

  // one row of K bytes per output pixel: for each channel of the group (from c0 on) and tap,
  // the source byte or (outside the source) the zero point's byte
  void im2col(RunContext& ctx, const uint8_t* x, uint8_t* cols, uint8_t zp, int64_t c0) const {
    if (pointwise_) {
      im2col_pointwise(ctx, x, cols, c0);
      return;
    }
    parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / P_, p = r % P_, oy = p / w_.out[1], ox = p % w_.out[1];
        uint8_t* row = cols + r * K_;
        for (int64_t c = 0; c < Cg_; ++c) {
          const uint8_t* xc = x + (img * C_ + c0 + c) * w_.in[0] * w_.in[1];
          for (int64_t ky = 0; ky < w_.k[0]; ++ky) {
            const int64_t iy = oy * w_.st[0] + ky * w_.dl[0] - w_.pb[0];
            uint8_t* dst = row + (c * w_.k[0] + ky) * w_.k[1];
            if (iy < 0 || iy >= w_.in[0]) {
              std::memset(dst, zp, static_cast<size_t>(w_.k[1]));
              continue;
            }
            const uint8_t* xr = xc + iy * w_.in[1];
            for (int64_t kx = 0; kx < w_.k[1]; ++kx) {
              const int64_t ix = ox * w_.st[1] + kx * w_.dl[1] - w_.pb[1];
              dst[kx] = ix < 0 || ix >= w_.in[1] ? zp : xr[ix];
            }
          }
        }
      }
    }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, K_)));
  }

  // A 1x1 window at unit strides without padding (SegFormer's decode-head convolutions in
  // ONNX Runtime's quantize_dynamic copy): the rows are the source [C, P] transposed to [P, C].
  // The loop above built each pixel's row from C bytes a plane apart, one cache line per byte:
  // [1, 1024, 64, 64] took most of the 13.9 ms that convolution spent (1 thread). Here tiles of
  // 64 pixels x 64 channels: each reads 64 source rows of 64 bytes and writes 64 rows of 64
  // bytes, both within L1. The same bytes land in the same places. OPFORGE_CPU_INT_CONV_POINTWISE=0:
  // the loop above.
  void im2col_pointwise(RunContext& ctx, const uint8_t* x, uint8_t* cols, int64_t c0) const {
    constexpr int64_t T = 64;
    const int64_t pblocks = (P_ + T - 1) / T;
    parallel_range(N_ * pblocks, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t img = r / pblocks, p0 = r % pblocks * T, p1 = std::min(P_, p0 + T);
        for (int64_t cb = 0; cb < Cg_; cb += T) {
          const int64_t cend = std::min(Cg_, cb + T);
          for (int64_t c = cb; c < cend; ++c) {
            const uint8_t* xc = x + (img * C_ + c0 + c) * P_;
            uint8_t* dst = cols + img * P_ * K_ + c;
            for (int64_t p = p0; p < p1; ++p) dst[p * K_] = xc[p];
          }
        }
      }
    }, 1);
  }

  static bool pointwise_switch() {
    static const bool on = env_switch_on("OPFORGE_CPU_INT_CONV_POINTWISE");
    return on;
  }

  int64_t N_ = 1, C_ = 1, O_ = 1, G_ = 1, Cg_ = 1, Og_ = 1, P_ = 1, K_ = 1, rows_ = 1;
  ConvWindow<2> w_;  // (a 1-D convolution is a 2-D one of height 1)
  bool has_zp_ = false, zp_signed_ = false, pointwise_ = false;
  dnnl::primitive prim_;
  dnnl::memory::desc src_md_, acc_md_, scratch_md_;
  std::vector<dnnl::memory> weights_;  // one packed matrix per group
  size_t prim_scratch_ = 0, cols_bytes_ = 0, acc_bytes_ = 0;
  std::vector<int32_t> wsum_;
  std::string impl_;
};
}  // namespace

std::string check_integer_convolution(const NodeDesc& n) {
  if (n.inputs.size() < 2) return "needs a source and filters";
  if (!int8_type(n.in(0).dtype)) return std::string("source is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (n.in(0).blocked) return "source must be plain";
  const size_t rank = n.in(0).shape.size();
  if (rank != 3 && rank != 4) return "1-D or 2-D convolutions only";
  if (n.in(1).dtype != DType::i8 || !n.is_const(1) || n.in(1).shape.size() != rank)
    return "filters must be a constant i8 [O, C/group, k...] tensor";
  const int64_t g = n.attrs.i("group", 1);
  if (g < 1 || n.in(1).shape[1] * g != n.in(0).shape[1] || n.in(1).shape[0] % g != 0)
    return "the filters' [O, C/group] do not match the source's channels and the group count";
  for (auto d : n.in(0).shape)
    if (d <= 0) return "empty source";
  const bool zp = n.attrs.b("has_zero_point", false);
  if (n.inputs.size() != (zp ? 3u : 2u)) return "unexpected number of inputs";
  if (zp) {
    if (!int8_type(n.in(2).dtype)) return "the zero point must be u8 or i8";
    int64_t c = 1;
    for (auto d : n.in(2).shape) c *= d;
    if (c != 1) return "the zero point must be one value (per tensor)";
  }
  if (!n.outputs.empty() && n.outputs[0].dtype != DType::i32) return "output must be i32";
  return "";
}

std::unique_ptr<Kernel> make_integer_convolution(NodeDesc& n) {
  const std::string why = check_integer_convolution(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<IntegerConvolutionKernel>(n);
}

OPFORGE_KERNEL(IntegerConvolution, make_integer_convolution, check_integer_convolution);

}  // namespace opforge_cpu
