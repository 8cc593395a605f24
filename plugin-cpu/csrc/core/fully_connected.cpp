#include "core/fully_connected.hpp"

#include <cstdlib>
#include <cstring>

#include "core/env_switch.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

MatMulPrimitive matmul_primitive_choice() {
  // read once: a process measures one setting at a time (unset or empty: matmul; an unknown
  // word fails the compile, which names it; the throw leaves the static unset, so the next
  // compile reads the variable again and fails the same way)
  static const MatMulPrimitive choice = [] {
    const std::string v = env_string("OPFORGE_CPU_MATMUL", "");
    if (v.empty()) return MatMulPrimitive::automatic;
    if (v == "matmul") return MatMulPrimitive::matmul;
    if (v == "inner_product") return MatMulPrimitive::inner_product;
    throw CompileFailure("OPFORGE_CPU_MATMUL='" + v + "': expected matmul or inner_product");
  }();
  return choice;
}

bool fc_inner_product_by_default(int64_t rows) {
  // Vendor and ISA are fixed for the process (oneDNN fixes its ISA at its first query); the
  // switch is read once like the others.
  static const bool amd_avx2 = [] {
    if (!env_switch_on("OPFORGE_CPU_FC_AMD_AVX2")) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    // AVX2 without AVX-512 as oneDNN sees it: matmul is gemm:jit there (3.2 has no AVX2 brgemm
    // matmul) while inner_product has brgemm:avx2. On an AVX-512 host both are brgemm.
    return __builtin_cpu_is("amd") && host_has_avx2_fma() && !host_has_avx512();
#else
    return false;
#endif
  }();
  // One row is a GEMV: gemm:jit's was as fast or faster there (1x1024x1024 0.047 / 0.047 ms,
  // 1x256x1024 0.009 / 0.012 ms, matmul / inner product, Zen 5 capped to AVX2, 1 thread); from
  // two rows on the inner product won (2x1024x1024 0.15 / 0.05 ms).
  return amd_avx2 && rows >= 2;
}

namespace {

class FullyConnectedKernel : public DnnlKernel {
 public:
  int sum_input = -1;
  int required_inplace_input(int out) const override { return out == 0 ? sum_input : -1; }
  bool packs_input(int i) const override { return i == 1; }
  // oneDNN's names ("brgemm:avx2", "x64:gemm:jit") do not say which primitive it is
  std::string impl_name() const override { return "inner_product:" + impl_; }
  void setup(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd) { set_primitive(p, pd); }
  void in(int arg, int idx, const dnnl::memory::desc& md) { arg_input(arg, idx, md); }
  void out(int arg, int idx, const dnnl::memory::desc& md) { arg_output(arg, idx, md); }
  void cst(int arg, dnnl::memory m) { arg_const(arg, std::move(m)); }
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::unique_ptr<Kernel> make_fully_connected(NodeDesc& n) {
  const MatMulPrimitive choice = matmul_primitive_choice();
  if (choice == MatMulPrimitive::matmul) return nullptr;
  // The form inner_product computes: src [M, K] (every leading dimension of A flattened into M,
  // A not transposed, plain), weights [N, K] constant, bias [N], dst [M, N] plain.
  if (!n.is_const(1) || n.in(0).blocked || n.attrs.b("transpose_a", false)) return nullptr;
  const Shape& a = n.in(0).shape;
  const Shape& b = n.in(1).shape;
  if (a.empty() || b.size() < 2) return nullptr;
  for (size_t d = 0; d + 2 < b.size(); ++d)
    if (b[d] != 1) return nullptr;  // batched weights: a real batched matmul
  const bool tb = n.attrs.b("transpose_b", false);
  const int64_t K = a.back();
  const int64_t N = tb ? b[b.size() - 2] : b.back();
  if ((tb ? b.back() : b[b.size() - 2]) != K || K == 0 || N == 0) return nullptr;
  int64_t M = 1;
  for (size_t d = 0; d + 1 < a.size(); ++d) M *= a[d];
  if (M == 0) return nullptr;
  if (choice == MatMulPrimitive::automatic && !fc_inner_product_by_default(M)) return nullptr;
  const bool has_bias = n.attrs.b("has_bias", false);
  if (has_bias) {
    int64_t count = 1;
    for (int64_t d : n.in(2).shape) count *= d;
    if (count != N || n.in(2).shape.empty() || n.in(2).shape.back() != N) return nullptr;  // not per column
  }
  const int sum_input = static_cast<int>(n.attrs.i("sum_input", -1));

  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc src({M, K}, dt::f32, tag::ab);
  const dnnl::memory::desc dst({M, N}, dt::f32, tag::ab);
  const dnnl::memory::desc bias({N}, dt::f32, tag::a);
  const dnnl::memory::desc w_any({N, K}, dt::f32, tag::any);
  // the constant as stored: [K, N] read as [N, K] through strides, or [N, K] when transposed
  const dnnl::memory::desc w_user({N, K}, dt::f32, tb ? dnnl::memory::dims{K, 1} : dnnl::memory::dims{1, N});
  dnnl::primitive_attr attr = default_attr();
  dnnl::post_ops ops;
  append_post_ops(ops, n.attrs);
  attr.set_post_ops(ops);
  dnnl::inner_product_forward::primitive_desc pd;
  try {
    pd = has_bias ? dnnl::inner_product_forward::primitive_desc(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                                src, w_any, bias, dst, attr)
                  : dnnl::inner_product_forward::primitive_desc(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                                src, w_any, dst, attr);
  } catch (const dnnl::error&) {
    return nullptr;  // no inner product for these post-ops: matmul has one
  }
  // oneDNN's reference kernel is far slower than matmul's
  const char* info = pd.impl_info_str();
  if (!info || starts_with(info, "ref")) return nullptr;

  auto k = std::make_unique<FullyConnectedKernel>();
  k->setup(dnnl::inner_product_forward(pd), pd);
  k->in(DNNL_ARG_SRC, 0, src);
  k->cst(DNNL_ARG_WEIGHTS, pack_constant(n.inputs[1].const_data, w_user, pd.weights_desc()));
  if (has_bias) k->in(DNNL_ARG_BIAS, 2, bias);
  k->out(DNNL_ARG_DST, 0, dst);
  k->sum_input = sum_input;
  return k;
}

}  // namespace opforge_cpu
