// oneDNN helpers: the engine, descriptors of plain tensors, fused post-ops, and a base class for
// kernels that are one oneDNN primitive.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kernel.hpp"

namespace opforge_cpu {

dnnl::engine& cpu_engine();
dnnl::memory::data_type dnnl_type(DType t);
bool dnnl_supports(DType t);
// Row-major descriptor of a plain tensor (rank 0 becomes [1]).
dnnl::memory::desc plain_md(DType t, const Shape& s);
// The descriptor a tensor has: its blocked one or the plain one.
dnnl::memory::desc md_of(const TensorInfo& t);
// `md` with f32 elements in `out`, when `md` (a bf16 tensor's) is a dense strided layout (nhwc,
// plain...: no inner blocks): where a bf16 element-wise kernel (Relu, Clamp) writes its f32 result.
bool f32_like(const dnnl::memory::desc& md, dnnl::memory::desc& out);
dnnl::memory::dims to_dims(const Shape& s);

// The post-ops of a fused Convolution/MatMul node: oneDNN's sum over the residual input first
// when "sum_input" >= 0 (the fusion pass only takes a residual Add before any activation), then
// each fused activation of "post_ops" ((op type, attributes) pairs), built by the post-op its
// kernel registered. Throws CompileFailure for an op that registered none. `drop_fused_tail`
// leaves out that many of the last fused activations (a kernel that runs them itself after the
// primitive: nn.cpp's Swish pass).
void append_post_ops(dnnl::post_ops& ops, const Attrs& attrs, size_t drop_fused_tail = 0);
// Only the fused activations (a quantized kernel's tail, which takes no sum).
void append_fused_ops(dnnl::post_ops& ops, const std::vector<FusedOp>& fused);

// A kernel that runs one oneDNN primitive; subclasses build prim_ and declare its arguments.
class DnnlKernel : public Kernel {
 public:
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override;
  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                              void* scratch) override;
  // Sets the new data handles of its arguments in what DnnlKernel::bind made.
  bool rebind(Bound* bound, const TensorView* in, size_t n_in, const TensorView* out, size_t n_out) override;
  size_t scratch_bytes() const override { return scratch_bytes_; }
  std::string impl_name() const override { return impl_; }

 protected:
  // Finish construction from a primitive descriptor (scratchpad size, impl name).
  void set_primitive(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd);
  void arg_input(int arg, int index, const dnnl::memory::desc& md) { args_.push_back({arg, 0, index, md}); }
  void arg_output(int arg, int index, const dnnl::memory::desc& md) { args_.push_back({arg, 1, index, md}); }
  void arg_const(int arg, dnnl::memory m) { consts_.emplace_back(arg, std::move(m)); }

  struct Arg { int arg; int kind; int index; dnnl::memory::desc md; };
  dnnl::primitive prim_;
  std::vector<Arg> args_;
  std::vector<std::pair<int, dnnl::memory>> consts_;
  dnnl::memory::desc scratch_md_;
  size_t scratch_bytes_ = 0;
  std::string impl_;
};

// Copies a constant (plain layout) into a new memory of the layout a primitive chose.
dnnl::memory pack_constant(const void* data, const dnnl::memory::desc& plain, const dnnl::memory::desc& want);

// Advises the whole 2 MB pages inside [p, p + bytes) MADV_HUGEPAGE (transparent huge pages), for
// a fresh buffer nothing has touched yet; buffers under 2 MB and OPFORGE_CPU_HUGE_PAGES=0: no-op.
void advise_huge_pages(void* p, size_t bytes);

// Run-time buffers (a request's arena and scratchpad, large output blocks) from this size up are
// 2 MB aligned and advised into 2 MB pages; below it a 2 MB page would be mostly padding.
constexpr size_t kHugeRunBufferFloor = size_t{4} << 20;
// A 64-byte aligned buffer of `bytes` (at least 1), given back with free_run_buffer; from
// kHugeRunBufferFloor up its own 2 MB-aligned mapping, advised (not with
// OPFORGE_CPU_HUGE_ARENA=0 or OPFORGE_CPU_HUGE_PAGES=0). Throws std::bad_alloc.
void* alloc_run_buffer(size_t bytes);
void free_run_buffer(void* p);  // (null: nothing)

// An owning handle of one run buffer: free_run_buffer when the handle goes. A State holds its
// arena and scratchpad this way so that they are given back however the State goes, including
// when its constructor throws half-way (a kernel's bind), where no destructor body runs.
struct RunBufferFree {
  void operator()(void* p) const noexcept { free_run_buffer(p); }
};
using RunBuffer = std::unique_ptr<void, RunBufferFree>;
inline RunBuffer make_run_buffer(size_t bytes) { return RunBuffer(alloc_run_buffer(bytes)); }

// Primitive attributes every kernel uses: user scratchpad (so requests own their scratch memory).
dnnl::primitive_attr default_attr();

// blocked -> plain copy, inserted by the planner before kernels that need plain data.
std::unique_ptr<Kernel> make_reorder_kernel(const TensorInfo& src, const TensorInfo& dst);

}  // namespace opforge_cpu
