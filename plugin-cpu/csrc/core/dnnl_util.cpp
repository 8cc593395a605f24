#include "core/dnnl_util.hpp"

#include <sstream>

namespace opforge_cpu {

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

bool dnnl_supports(DType t) {
  switch (t) {
    case DType::f32: case DType::f16: case DType::bf16: case DType::i32: case DType::i8:
    case DType::u8: case DType::f64: case DType::boolean:
      return true;
    default:
      return false;
  }
}

dnnl::memory::data_type dnnl_type(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::f32: return dt::f32;
    case DType::f16: return dt::f16;
    case DType::bf16: return dt::bf16;
    case DType::i32: return dt::s32;
    case DType::i8: return dt::s8;
    case DType::u8: case DType::boolean: return dt::u8;
    case DType::f64: return dt::f64;
    default: throw CompileFailure(std::string("oneDNN has no ") + dtype_name(t) + " type");
  }
}

dnnl::memory::dims to_dims(const Shape& s) {
  if (s.empty()) return {1};
  return dnnl::memory::dims(s.begin(), s.end());
}

dnnl::memory::desc plain_md(DType t, const Shape& s) {
  auto dims = to_dims(s);
  auto strides = strides_of(Shape(dims.begin(), dims.end()));
  return dnnl::memory::desc(dims, dnnl_type(t), dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::memory::desc md_of(const TensorInfo& t) { return t.blocked ? t.md : plain_md(t.dtype, t.shape); }

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

static std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, c)) out.push_back(cur);
  return out;
}

bool eltwise_alg(const std::string& name, dnnl::algorithm& alg, float& alpha, float& beta) {
  using a = dnnl::algorithm;
  auto parts = split(name, ':');
  const std::string& k = parts.empty() ? name : parts[0];
  auto num = [&](size_t i, float d) { return parts.size() > i ? std::stof(parts[i]) : d; };
  alpha = 0.f;
  beta = 0.f;
  if (k == "relu") { alg = a::eltwise_relu; alpha = num(1, 0.f); }
  else if (k == "clip") { alg = a::eltwise_clip_v2; alpha = num(1, 0.f); beta = num(2, 0.f); }
  else if (k == "gelu_erf") alg = a::eltwise_gelu_erf;
  else if (k == "gelu_tanh") alg = a::eltwise_gelu_tanh;
  else if (k == "sigmoid") alg = a::eltwise_logistic;
  else if (k == "tanh") alg = a::eltwise_tanh;
  else if (k == "swish") { alg = a::eltwise_swish; alpha = num(1, 1.f); }
  else if (k == "hswish") alg = a::eltwise_hardswish, alpha = 1.f / 6.f, beta = 0.5f;
  else if (k == "hsigmoid") alg = a::eltwise_hardsigmoid, alpha = 1.f / 6.f, beta = 0.5f;
  else if (k == "elu") { alg = a::eltwise_elu; alpha = num(1, 1.f); }
  else if (k == "abs") alg = a::eltwise_abs;
  else if (k == "exp") alg = a::eltwise_exp;
  else if (k == "log") alg = a::eltwise_log;
  else if (k == "sqrt") alg = a::eltwise_sqrt;
  else if (k == "mish") alg = a::eltwise_mish;
  else if (k == "softplus") { alg = a::eltwise_soft_relu; alpha = 1.f; }
  else if (k == "linear") { alg = a::eltwise_linear; alpha = num(1, 1.f); beta = num(2, 0.f); }
  else if (k == "square") alg = a::eltwise_square;
  else return false;
  return true;
}

int append_post_ops(dnnl::post_ops& ops, const std::vector<std::string>& encoded) {
  int sum_at = -1;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const auto& e = encoded[i];
    if (e == "sum") {
      ops.append_sum(1.f);
      sum_at = static_cast<int>(i);
      continue;
    }
    dnnl::algorithm alg;
    float alpha, beta;
    if (!eltwise_alg(e, alg, alpha, beta)) throw CompileFailure("unknown fused post-op '" + e + "'");
    ops.append_eltwise(alg, alpha, beta);
  }
  return sum_at;
}

namespace {
struct DnnlBound : Bound {
  std::unordered_map<int, dnnl::memory> args;
};
}  // namespace

void DnnlKernel::set_primitive(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd) {
  prim_ = p;
  scratch_md_ = pd.scratchpad_desc();
  scratch_bytes_ = scratch_md_.get_size();
  const char* info = pd.impl_info_str();
  impl_ = info ? info : "onednn";
}

std::unique_ptr<Bound> DnnlKernel::bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                                        void* scratch) {
  auto b = std::make_unique<DnnlBound>();
  auto& eng = cpu_engine();
  for (const auto& a : args_) {
    void* ptr = a.kind == 0 ? in[a.index].data : out[a.index].data;
    b->args.emplace(a.arg, dnnl::memory(a.md, eng, ptr));
  }
  for (const auto& c : consts_) b->args.emplace(c.first, c.second);
  if (scratch_bytes_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, scratch));
  return b;
}

void DnnlKernel::run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) {
  prim_.execute(*ctx.stream, static_cast<DnnlBound*>(bound)->args);
}

dnnl::memory pack_constant(const void* data, const dnnl::memory::desc& plain, const dnnl::memory::desc& want) {
  auto& eng = cpu_engine();
  dnnl::memory src(plain, eng, const_cast<void*>(data));
  dnnl::memory dst(want, eng);
  dnnl::stream s(eng);
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  return dst;
}

namespace {
class ReorderKernel : public DnnlKernel {
 public:
  ReorderKernel(const TensorInfo& src, const TensorInfo& dst) {
    auto smd = md_of(src), dmd = md_of(dst);
    dnnl::reorder::primitive_desc pd(cpu_engine(), smd, cpu_engine(), dmd, default_attr());
    set_primitive(dnnl::reorder(pd), pd);
    arg_input(DNNL_ARG_FROM, 0, smd);
    arg_output(DNNL_ARG_TO, 0, dmd);
  }
};
}  // namespace

std::unique_ptr<Kernel> make_reorder_kernel(const TensorInfo& src, const TensorInfo& dst) {
  return std::make_unique<ReorderKernel>(src, dst);
}

}  // namespace opforge_cpu
