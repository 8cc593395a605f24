#include "core/dnnl_util.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <typeinfo>

#include "core/env_switch.hpp"
#include "core/primitive_log.hpp"

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

bool f32_like(const dnnl::memory::desc& md, dnnl::memory::desc& out) {
  if (!md.get_inner_blks().empty() || md.get_format_kind() != dnnl::memory::format_kind::blocked) return false;
  out = dnnl::memory::desc(md.get_dims(), dnnl::memory::data_type::f32, md.get_strides());
  return out.get_size() == md.get_size() * 2;
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

void append_post_ops(dnnl::post_ops& ops, const Attrs& attrs, size_t drop_fused_tail) {
  if (attrs.i("sum_input", -1) >= 0) ops.append_sum(1.f);
  // a constant scalar Multiply/Divide the emitter folded in (attention's 1/sqrt(d), emit.py
  // _scalar_factor); never after a bias or sum in the graph, so its place here is right
  if (attrs.has("out_scale"))
    ops.append_eltwise(dnnl::algorithm::eltwise_linear, static_cast<float>(attrs.f("out_scale")), 0.f);
  std::vector<FusedOp> fused = attrs.fused_ops("post_ops");
  fused.resize(fused.size() - std::min(drop_fused_tail, fused.size()));
  append_fused_ops(ops, fused);
}

void append_fused_ops(dnnl::post_ops& ops, const std::vector<FusedOp>& fused) {
  for (const FusedOp& f : fused) {
    const KernelEntry* e = find_kernel(f.type);
    if (!e || !e->post_op || !f.attrs) throw CompileFailure("fused " + f.type + " is not an op oneDNN can run as a post-op");
    const Eltwise el = e->post_op(*f.attrs);
    ops.append_eltwise(el.alg, el.alpha, el.beta);
  }
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
  note_primitive(pd);
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

bool DnnlKernel::rebind(Bound* bound, const TensorView* in, size_t, const TensorView* out, size_t) {
  // Only the Bound this class's bind() made: a subclass's own Bound gets bind() again.
  if (!bound || typeid(*bound) != typeid(DnnlBound)) return false;
  auto& bound_args = static_cast<DnnlBound*>(bound)->args;
  for (const auto& a : args_) {
    void* ptr = a.kind == 0 ? in[a.index].data : out[a.index].data;
    auto it = bound_args.find(a.arg);
    if (it == bound_args.end()) return false;
    // unchanged handles stay untouched (setting one may zero-pad a blocked buffer)
    if (it->second.get_data_handle() != ptr) it->second.set_data_handle(ptr);
  }
  return true;
}

void DnnlKernel::run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) {
  prim_.execute(*ctx.stream, static_cast<DnnlBound*>(bound)->args);
}

namespace {

// OPFORGE_CPU_HUGE_PAGES=0: packed constants stay in ordinary 4 KB pages, for same-build A/B
// measurements (read once a process).
bool huge_pages_enabled() {
  static const bool enabled = env_switch_on("OPFORGE_CPU_HUGE_PAGES");
  return enabled;
}

// OPFORGE_CPU_HUGE_ARENA=0: run-time buffers (arena, scratchpad, large outputs) stay in 4 KB
// pages while packed constants keep theirs, so the two can be A/B'd apart (read once a process).
bool huge_arena_enabled() {
  static const bool enabled = huge_pages_enabled() && env_switch_on("OPFORGE_CPU_HUGE_ARENA");
  return enabled;
}

}  // namespace

// Packed weights are streamed once an inference from memory (vgg11's 196 MB bf16 classifier, a
// transformer's projections): in 4 KB pages every 4 KB is a TLB miss and a page walk. Linux gives
// transparent 2 MB pages only to memory advised MADV_HUGEPAGE (THP "madvise", this host and most
// distributions' default; OpenVINO and ONNX Runtime advise nothing: no MADV_HUGEPAGE under
// strace, no AnonHugePages, stop 17). So the 2 MB-aligned interior of a
// fresh packed buffer is advised before the reorder first touches it. oneDNN 3.2 matmul, vgg11's
// FC1 (M=1, K=25088, N=4096, bf16, AMX), C++ micro-benchmark alternating, huge / 4 KB pages:
// 0.70 at 1 thread, 0.73 at 2; 4096x4096 (32 MB) 0.59, 4096x1000 (8 MB) 0.61. Advice only: where
// THP is off or no 2 MB page is free, the kernel keeps 4 KB pages and nothing else changes.
void advise_huge_pages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (!huge_pages_enabled() || bytes < kHuge) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (a + kHuge - 1) / kHuge * kHuge, end = (a + bytes) / kHuge * kHuge;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

namespace {
// What sits in the 64 bytes before a run buffer: the mapping to unmap, or (null base) the
// malloc block to free.
struct RunBufferHeader {
  void* base;
  size_t length;
};
constexpr size_t kRunHeader = 64;
}  // namespace

void* alloc_run_buffer(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (bytes >= kHugeRunBufferFloor && huge_arena_enabled()) {
    // Its own mapping (not malloc's: glibc's dynamic mmap threshold can hand a large block out
    // of an already-touched heap, and the advice would stay on heap memory after free), 2 MB
    // aligned so every whole 2 MB of it can be one page, advised before anything (a kernel's
    // bind zero-padding a blocked buffer) touches it. Only whole pages are advised
    // (advise_huge_pages rounds the end down): the partial tail never grows to 2 MB of RSS; the
    // up to 2 MB in front (the header's 4 KB page aside) is never touched.
    const size_t length = bytes + kHuge;
    void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t b = reinterpret_cast<uintptr_t>(base);
    char* p = reinterpret_cast<char*>((b + kRunHeader + kHuge - 1) / kHuge * kHuge);
    advise_huge_pages(p, bytes);
    *reinterpret_cast<RunBufferHeader*>(p - kRunHeader) = {base, length};
    return p;
  }
  char* block = static_cast<char*>(std::aligned_alloc(64, bytes + kRunHeader));
  if (!block) throw std::bad_alloc();
  *reinterpret_cast<RunBufferHeader*>(block) = {nullptr, 0};
  return block + kRunHeader;
}

void free_run_buffer(void* p) {
  if (!p) return;
  char* data = static_cast<char*>(p);
  const RunBufferHeader h = *reinterpret_cast<const RunBufferHeader*>(data - kRunHeader);
  if (h.base) munmap(h.base, h.length);
  else std::free(data - kRunHeader);
}

dnnl::memory pack_constant(const void* data, const dnnl::memory::desc& plain, const dnnl::memory::desc& want) {
  auto& eng = cpu_engine();
  dnnl::memory src(plain, eng, const_cast<void*>(data));
  dnnl::memory dst(want, eng);
  advise_huge_pages(dst.get_data_handle(), want.get_size());
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
