// IntegerMatMul (opforge_cpu/ops/integer_mat_mul.py, made by passes/int8/dynamic.py): ONNX's
// MatMulInteger of a u8/s8 source [..., M, K] minus a per-tensor zero point given at run time
// (DynamicQuantizeLinear's output) and constant zero-point-centred s8 weights [K, N], as one
// oneDNN int8 matmul, writing the exact i32 sums, or (output_type f32) f32(sum) * scale with the
// scale a run-time f32 scalar: quantize_dynamic's Cast + Mul epilogue, in ONNX's order (the
// exact integer converted to f32 once, then one f32 product).
//
// Exactness: oneDNN runs the raw u8/s8 x s8 -> s32 product with no attributes at all (no scales,
// no zero points, no post-ops), so its accumulator is stored as it is, and the source zero point
// is taken out here, acc - zp * colsum(W)[n], in wrapping 32-bit arithmetic (NumPy's and ONNX
// Runtime's int32 matmul wrap the same way). oneDNN's own zero-point and scale attributes would
// route the sum through f32 (its int8 kernels apply scales in f32), which is inexact past 2^24.
// The planning pass refuses hosts whose kernels add u8 x s8 pairs in saturating int16 (no VNNI)
// unless every |w| <= 64 and the source is u8 (passes/int8/no_vnni.py).
#include <cstring>
#include <string>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "core/elementwise.hpp"
#include "core/isa_clones.hpp"
#include "core/nn.hpp"
#include "core/primitive_log.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
struct IntMatMulBound : Bound {
  std::unordered_map<int, dnnl::memory> args;
};

// rows [r0, r1) of the [R, N] sums in place: acc - zp * colsum (wrapping), and for an f32
// output f32(that) * scale written over the same 4 bytes.
__attribute__((always_inline)) inline void epilogue_rows(int32_t* acc, int64_t r0, int64_t r1, int64_t n,
                                                         const int32_t* colsum, int32_t zp, bool to_f32,
                                                         float scale) {
  const uint32_t uzp = static_cast<uint32_t>(zp);
  for (int64_t r = r0; r < r1; ++r) {
    int32_t* row = acc + r * n;
    float* frow = reinterpret_cast<float*>(row);
    if (to_f32) {
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t v = static_cast<uint32_t>(row[j]) - uzp * static_cast<uint32_t>(colsum[j]);
        frow[j] = static_cast<float>(static_cast<int32_t>(v)) * scale;
      }
    } else {
      for (int64_t j = 0; j < n; ++j)
        row[j] = static_cast<int32_t>(static_cast<uint32_t>(row[j]) - uzp * static_cast<uint32_t>(colsum[j]));
    }
  }
}
OPFORGE_ISA_CLONES(static, "avx512f", epilogue, epilogue_rows,
                   (int32_t* acc, int64_t r0, int64_t r1, int64_t n, const int32_t* colsum, int32_t zp, bool to_f32,
                    float scale),
                   (acc, r0, r1, n, colsum, zp, to_f32, scale))

// The f32 epilogue with the bias Add after the product: y = (f32(acc - zp * colsum) * scale) +
// bias[n], two roundings as the graph's Mul and Add have. The empty asm keeps the product a
// rounded f32 value: the build contracts a * b + c into one FMA (one rounding) otherwise.
inline float rounded(float t) {
  asm("" : "+x"(t));
  return t;
}
void bias_rows_scalar(int32_t* acc, int64_t r0, int64_t r1, int64_t n, const int32_t* colsum, int32_t zp, float scale,
                      const float* bias, int64_t j0) {
  const uint32_t uzp = static_cast<uint32_t>(zp);
  for (int64_t r = r0; r < r1; ++r) {
    int32_t* row = acc + r * n;
    float* frow = reinterpret_cast<float*>(row);
    for (int64_t j = j0; j < n; ++j) {
      const uint32_t v = static_cast<uint32_t>(row[j]) - uzp * static_cast<uint32_t>(colsum[j]);
      frow[j] = rounded(static_cast<float>(static_cast<int32_t>(v)) * scale) + bias[j];
    }
  }
}
#if defined(__x86_64__) && defined(__GNUC__)
// 16 columns a step (vpmulld and vpsubd wrap modulo 2^32 as the scalar form); returns the first
// column left to the scalar loop
__attribute__((target("avx512f"))) int64_t bias_rows_avx512(int32_t* acc, int64_t r0, int64_t r1, int64_t n,
                                                             const int32_t* colsum, int32_t zp, float scale,
                                                             const float* bias) {
  const __m512i vz = _mm512_set1_epi32(zp);
  const __m512 vs = _mm512_set1_ps(scale);
  const int64_t whole = n / 16 * 16;
  for (int64_t r = r0; r < r1; ++r) {
    int32_t* row = acc + r * n;
    float* frow = reinterpret_cast<float*>(row);
    for (int64_t j = 0; j < whole; j += 16) {
      const __m512i c = _mm512_loadu_si512(colsum + j);
      const __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(row + j), _mm512_mullo_epi32(vz, c));
      __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(v), vs);
      asm("" : "+v"(t));  // (as rounded(): no FMA)
      _mm512_storeu_ps(frow + j, _mm512_add_ps(t, _mm512_loadu_ps(bias + j)));
    }
  }
  return whole;
}
#endif
void bias_rows(int32_t* acc, int64_t r0, int64_t r1, int64_t n, const int32_t* colsum, int32_t zp, float scale,
               const float* bias) {
  int64_t j0 = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (host_has_avx512()) j0 = bias_rows_avx512(acc, r0, r1, n, colsum, zp, scale, bias);
#endif
  if (j0 < n) bias_rows_scalar(acc, r0, r1, n, colsum, zp, scale, bias, j0);
}

bool int8_type(DType t) { return t == DType::u8 || t == DType::i8; }

class IntegerMatMulKernel : public Kernel {
 public:
  explicit IntegerMatMulKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const int rank = static_cast<int>(xs.size());
    const Shape& ws = n.in(1).shape;
    // weights [K, N] shared by every row, or [B, K, N] one matrix per batch of a [B, M, K] source
    // (DeBERTa's per-head relative-position terms)
    batch_ = ws.size() == 3 ? ws[0] : 1;
    K_ = ws[ws.size() - 2];
    N_ = ws[ws.size() - 1];
    rows_ = 1;
    for (int d = 0; d + 1 < rank; ++d) rows_ *= xs[d];
    M_ = rows_ / batch_;
    has_zp_ = n.attrs.b("has_zero_point", false);
    to_f32_ = n.outputs[0].dtype == DType::f32;
    zp_input_ = has_zp_ ? 2 : -1;
    scale_input_ = to_f32_ ? (has_zp_ ? 3 : 2) : -1;
    zp_signed_ = has_zp_ && n.in(2).dtype == DType::i8;
    has_bias_ = n.attrs.b("has_bias", false);
    if (has_bias_) {
      const float* bias = static_cast<const float*>(n.inputs[scale_input_ + 1].const_data);
      bias_.assign(bias, bias + N_);
    }
    // oneDNN sees [rows, K] x [K, N] -> [rows, N]: the leading axes of the source are rows of
    // one 2-D product (the weights are shared), which is the layout the source already has
    src_md_ = plain_md(n.in(0).dtype, {batch_, M_, K_});
    dst_md_ = plain_md(DType::i32, {batch_, M_, N_});
    const auto w_plain = plain_md(DType::i8, {batch_, K_, N_});
    const dnnl::memory::desc w_any({batch_, K_, N_}, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(cpu_engine(), src_md_, w_any, dst_md_, default_attr());
    impl_ = pd.impl_info_str() ? pd.impl_info_str() : "onednn";
    note_primitive(pd);
    prim_ = dnnl::matmul(pd);
    scratch_md_ = pd.scratchpad_desc();
    scratch_ = (scratch_md_.get_size() + 63) / 64 * 64;
    const void* w = n.inputs[1].const_data;
    weights_ = pack_constant(w, w_plain, pd.weights_desc());
    // column sums of the weights (each batch's): the zero point's share of every sum, zp * colsum[n]
    colsum_.assign(static_cast<size_t>(batch_ * N_), 0);
    const int8_t* wb = static_cast<const int8_t*>(w);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t k = 0; k < K_; ++k)
        for (int64_t j = 0; j < N_; ++j) colsum_[b * N_ + j] += wb[(b * K_ + k) * N_ + j];
  }
  std::string impl_name() const override { return "int8_dynamic:" + impl_; }
  size_t scratch_bytes() const override { return scratch_; }
  bool packs_input(int i) const override { return i == 1 || (has_bias_ && i == scale_input_ + 1); }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView* out, size_t, void* scratch) override {
    auto b = std::make_unique<IntMatMulBound>();
    auto& eng = cpu_engine();
    b->args.emplace(DNNL_ARG_SRC, dnnl::memory(src_md_, eng, in[0].data));
    b->args.emplace(DNNL_ARG_WEIGHTS, weights_);
    b->args.emplace(DNNL_ARG_DST, dnnl::memory(dst_md_, eng, out[0].data));
    if (scratch_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, scratch));
    return b;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* b = static_cast<IntMatMulBound*>(bound);
    prim_.execute(*ctx.stream, b->args);
    int32_t zp = 0;
    if (has_zp_) {
      zp = zp_signed_ ? static_cast<int32_t>(*in[zp_input_].ptr<int8_t>())
                      : static_cast<int32_t>(*in[zp_input_].ptr<uint8_t>());
    }
    const float scale = to_f32_ ? *in[scale_input_].ptr<float>() : 1.f;
    if (zp == 0 && !to_f32_) return;  // the sums are the answer
    int32_t* acc = out[0].ptr<int32_t>();
    const int32_t* cs = colsum_.data();
    const int64_t n = N_;
    const bool f = to_f32_;
    const float* bias = has_bias_ ? bias_.data() : nullptr;
    const int64_t m = M_;
    parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      // the rows of each batch with that batch's column sums
      for (int64_t s = r0; s < r1;) {
        const int64_t b = s / m, e = std::min(r1, (b + 1) * m);
        if (bias) bias_rows(acc, s, e, n, cs + b * n, zp, scale, bias);
        else epilogue(acc, s, e, n, cs + b * n, zp, f, scale);
        s = e;
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)));
  }

 private:
  int64_t K_ = 0, N_ = 0, rows_ = 0, batch_ = 1, M_ = 0;
  bool has_zp_ = false, to_f32_ = false, zp_signed_ = false, has_bias_ = false;
  std::vector<float> bias_;
  int zp_input_ = -1, scale_input_ = -1;
  dnnl::primitive prim_;
  dnnl::memory::desc src_md_, dst_md_, scratch_md_;
  dnnl::memory weights_;
  size_t scratch_ = 0;
  std::vector<int32_t> colsum_;
  std::string impl_;
};
}  // namespace

std::string check_integer_mat_mul(const NodeDesc& n) {
  if (n.inputs.size() < 2) return "needs a source and weights";
  if (!int8_type(n.in(0).dtype)) return std::string("source is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (n.in(0).blocked) return "source must be plain";
  if (n.in(0).shape.size() < 2) return "source must have rank 2 or more";
  const Shape& ws = n.in(1).shape;
  if (n.in(1).dtype != DType::i8 || !n.is_const(1) || (ws.size() != 2 && ws.size() != 3))
    return "weights must be a constant i8 [K, N] matrix or [B, K, N] batch of them";
  if (ws.size() == 3 && (n.in(0).shape.size() != 3 || n.in(0).shape[0] != ws[0]))
    return "[B, K, N] weights need a [B, M, K] source";
  if (n.in(0).shape.back() != ws[ws.size() - 2]) return "inner dimensions differ";
  if (ws[ws.size() - 2] == 0) return "empty inner dimension";
  for (auto d : n.in(0).shape)
    if (d == 0) return "empty source";
  const bool zp = n.attrs.b("has_zero_point", false);
  size_t want = 2 + (zp ? 1 : 0);
  if (zp) {
    if (!int8_type(n.in(2).dtype)) return "the zero point must be u8 or i8";
    int64_t c = 1;
    for (auto d : n.in(2).shape) c *= d;
    if (c != 1) return "the zero point must be one value (per tensor)";
  }
  if (!n.outputs.empty()) {
    const DType o = n.outputs[0].dtype;
    if (o != DType::i32 && o != DType::f32) return "output must be i32 or f32";
    if (o == DType::f32) {
      const int s = static_cast<int>(want);
      if (n.inputs.size() <= want || n.in(s).dtype != DType::f32) return "an f32 output needs an f32 scale input";
      int64_t c = 1;
      for (auto d : n.in(s).shape) c *= d;
      if (c != 1) return "the scale must be one value";
      ++want;
    }
    if (n.attrs.b("has_bias", false)) {
      if (o != DType::f32) return "a bias needs an f32 output";
      const int b = static_cast<int>(want);
      if (n.inputs.size() <= want || n.in(b).dtype != DType::f32 || !n.is_const(b)) return "the bias must be an f32 constant";
      int64_t c = 1;
      for (auto d : n.in(b).shape) c *= d;
      if (c != ws.back()) return "the bias must have one value per output column";
      ++want;
    }
  }
  if (n.inputs.size() != want) return "unexpected number of inputs";
  return "";
}

std::unique_ptr<Kernel> make_integer_mat_mul(NodeDesc& n) {
  const std::string why = check_integer_mat_mul(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<IntegerMatMulKernel>(n);
}

OPFORGE_KERNEL(IntegerMatMul, make_integer_mat_mul, check_integer_mat_mul);

}  // namespace opforge_cpu
