// QuantizedMatMul (opforge_cpu/ops/quantized_mat_mul.py): one oneDNN int8 matmul of a plain
// u8/s8 source [..., M, K] (zero point) and constant s8 weights [K, N] with per-column scales
// (packed once), f32 bias, fused relu/clip, u8/s8 (requantized) or f32 destination [..., M, N].
#include <string>

#include "core/env_switch.hpp"
#include "core/nn.hpp"
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

std::string check_quantized_mat_mul(const NodeDesc& n) {
  std::string why = check_quantized(n);
  if (!why.empty()) return why;
  if (n.in(0).shape.size() < 2 || n.in(0).shape.size() > 12) return "data must have rank 2 to 12";
  if (n.in(1).shape.size() != 2) return "weights must be a [K, N] matrix";
  if (n.in(0).shape.back() != n.in(1).shape[0]) return "inner dimensions differ";
  return "";
}

std::unique_ptr<Kernel> make_quantized_mat_mul(NodeDesc& n) {
  std::string why = check_quantized_mat_mul(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  const int rank = static_cast<int>(xs.size());
  const int64_t K = n.in(1).shape[0], N = n.in(1).shape[1];
  QuantParams q = quant_params(n, N);
  if (q.sum_input >= 0) throw CompileFailure("a quantized MatMul takes no residual operand");
  dnnl::primitive_attr attr = quant_attr(q, 1 << (rank - 1));  // per column of the weights
  Shape wdims(rank, 1), bdims(rank, 1);
  wdims[rank - 2] = K;
  wdims[rank - 1] = N;
  bdims[rank - 1] = N;
  auto src = plain_md(n.in(0).dtype, xs);
  auto w_plain = plain_md(DType::i8, wdims);
  auto w_any = dnnl::memory::desc(to_dims(wdims), dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
  auto dst = plain_md(q.out, ys);
  auto bias_md = plain_md(DType::f32, bdims);
  auto make_pd = [&](const dnnl::memory::desc& w) {
    return q.has_bias ? dnnl::matmul::primitive_desc(cpu_engine(), src, w, bias_md, dst, attr)
                      : dnnl::matmul::primitive_desc(cpu_engine(), src, w, dst, attr);
  };
  auto pd = make_pd(w_any);
  // Where oneDNN has no blocked-weights int8 matmul (an AVX2 host without VNNI: "any" resolves to
  // the plain [K, N] layout and the reference-driver `gemm:jit`), ask for the weights transposed,
  // K innermost (oneDNN's "ba"): its s8 gemm then streams each output column's K bytes in order
  // instead of striding over N, the layout an inner product uses. Scratch benchmark under
  // ONEDNN_MAX_CPU_ISA=AVX2, 1 thread: 1x25088 * 25088x4096 13.3 -> 9.0 ms, 1x4096 * 4096x4096
  // 2.0 -> 0.78 ms, M=32 1.31 -> 1.19, M=256 equal (kernel-library.md "int8 MatMul weights on an
  // AVX2 host (stop 23)"). Hosts with a blocked layout (brgemm: AVX-512 VNNI, AMX) keep "any".
  // OPFORGE_CPU_INT8_MATMUL_KN=0 turns this off.
  static const bool transposed_on = env_switch_on("OPFORGE_CPU_INT8_MATMUL_KN");
  const char* impl = pd.impl_info_str();
  if (transposed_on && impl != nullptr && std::string(impl).rfind("gemm", 0) == 0) {
    dnnl::memory::dims strides(rank, K * N);
    strides[rank - 2] = 1;  // K innermost
    strides[rank - 1] = K;
    const dnnl::memory::desc w_kn(to_dims(wdims), dnnl::memory::data_type::s8, strides);
    try {
      auto pd_kn = make_pd(w_kn);
      const char* impl_kn = pd_kn.impl_info_str();
      if (impl_kn != nullptr && std::string(impl_kn).rfind("gemm", 0) == 0) pd = pd_kn;
    } catch (const dnnl::error&) {
      // no implementation for this layout: keep the plain one
    }
  }
  auto k = std::make_unique<QuantizedKernel>();
  k->finish(dnnl::matmul(pd), pd, src, n.inputs[1].const_data, w_plain, bias_md, q);
  return k;
}

OPFORGE_KERNEL(QuantizedMatMul, make_quantized_mat_mul, check_quantized_mat_mul);

}  // namespace opforge_cpu
