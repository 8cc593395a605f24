// The kernel interface: what a kernel gets when it is built (a NodeDesc) and when it runs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/attrs.hpp"
#include "core/tensor.hpp"

namespace opforge_cpu {

// What the program knows of a tensor at build time.
struct TensorInfo {
  DType dtype = DType::f32;
  Shape shape;
  // A layout chosen by oneDNN (nChw16c...) instead of plain row-major; only oneDNN kernels that
  // declared themselves layout-flexible ever see such a tensor (others get a reorder first).
  bool blocked = false;
  dnnl::memory::desc md;

  size_t bytes() const;
};

struct InputDesc {
  TensorInfo info;
  // Non-null when the input is a constant: kernels read axes/shapes and pre-pack weights here.
  const void* const_data = nullptr;
};

struct NodeDesc {
  std::string name;
  std::string type;
  std::string version;
  Attrs attrs;
  std::vector<InputDesc> inputs;
  std::vector<TensorInfo> outputs;
  // Set by the planner: output i may be produced in a blocked layout (all its readers accept one).
  std::vector<bool> allow_blocked_output;
  int num_threads = 1;

  const TensorInfo& in(int i) const { return inputs.at(i).info; }
  bool is_const(int i) const { return i < static_cast<int>(inputs.size()) && inputs[i].const_data; }
  // Values of a constant integer input (axes, shapes); throws CompileFailure when not constant.
  std::vector<int64_t> const_ints(int i) const;
  std::vector<double> const_floats(int i) const;
  [[noreturn]] void fail(const std::string& why) const;
};

struct RunContext {
  dnnl::stream* stream = nullptr;
  int num_threads = 1;
  void* scratch = nullptr;  // per-request, sized by the largest Kernel::scratch_bytes()
  std::atomic<int64_t>* python_calls = nullptr;
};

// Per-request data a kernel prepares once per infer request (oneDNN memory objects bound to the
// request's buffers), so that running allocates nothing.
struct Bound {
  virtual ~Bound() = default;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Run on views whose buffers were planned for this request.
  virtual void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) = 0;
  virtual std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out,
                                      size_t n_out, void* scratch) {
    return nullptr;
  }
  // The program reads model inputs and writes model outputs in the caller's arrays, so the data
  // of a step's views that are model inputs/outputs changes between inferences: point `bound`
  // (what bind() returned) at the new data of in/out. Return false when it cannot, and the
  // executor calls bind() again (always correct, allocates). A kernel that keeps no Bound reads
  // its views when it runs: nothing to do. A DnnlKernel subclass with its own bind() must
  // override this too.
  virtual bool rebind(Bound* bound, const TensorView* in, size_t n_in, const TensorView* out, size_t n_out) {
    return bound == nullptr;
  }
  // Output `out` may be written over input `return value` (element-wise, same byte size), or -1.
  virtual int inplace_input(int out) const { return -1; }
  // Output `out` must be written over input `return value` (oneDNN sum post-op), or -1.
  virtual int required_inplace_input(int out) const { return -1; }
  virtual size_t scratch_bytes() const { return 0; }
  // What ran, for the performance counters ("brgconv:avx512_core", "ref").
  virtual std::string impl_name() const { return "ref"; }
  // Runs Python (a NumPy kernel): the executor takes the GIL around it.
  virtual bool needs_gil() const { return false; }
  // Constant input `i` was copied (packed) into the kernel when it was built and is never read
  // at run time: once every reader packed it, the program may release the original.
  virtual bool packs_input(int i) const { return false; }
};

using KernelFactory = std::unique_ptr<Kernel> (*)(NodeDesc& node);
// Returns "" when the node is supported, else why not (element type, attribute value).
using KernelCheck = std::string (*)(const NodeDesc& node);

// One oneDNN eltwise operation: what an activation is when it runs as a post-op of the
// convolution/MatMul before it, or stand-alone as an eltwise primitive.
struct Eltwise {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f;
  float beta = 0.f;
};
// Builds an op's eltwise from its node's attributes (Clamp reads min/max, Elu alpha).
using PostOpBuilder = Eltwise (*)(const Attrs& attrs);

struct KernelEntry {
  std::string type;
  KernelFactory make = nullptr;
  KernelCheck check = nullptr;      // nullptr: every node of the type is supported
  bool layout_flexible = false;     // accepts blocked (oneDNN-chosen) layouts on its data inputs
  PostOpBuilder post_op = nullptr;  // non-null: the op fuses into a preceding Convolution/MatMul
};

// How a kernel file describes itself: OPFORGE_KERNEL(Relu, make_relu, check_relu)
// followed by the options that apply, e.g. .layout_flexible().post_op(relu_eltwise).
class KernelSpec {
 public:
  KernelSpec(const char* type, KernelFactory make, KernelCheck check) {
    entry_.type = type;
    entry_.make = make;
    entry_.check = check;
  }
  KernelSpec& layout_flexible() {
    entry_.layout_flexible = true;
    return *this;
  }
  KernelSpec& post_op(PostOpBuilder build) {
    entry_.post_op = build;
    return *this;
  }
  const KernelEntry& entry() const { return entry_; }

 private:
  KernelEntry entry_;
};

// A static object per kernel file whose constructor adds the kernel to the registry while the
// module is loaded. The registry is a function-local static (kernel_registry()), so it exists
// before the first registrar runs whatever order the linker put the object files in.
struct KernelRegistrar {
  KernelRegistrar(const KernelSpec& spec);  // implicit: OPFORGE_KERNEL initialises it with `=`
};

// Registers the kernel of op TYPE (an identifier: the opset type name) with its factory and its
// support check (nullptr: every node of the type); chain .layout_flexible() / .post_op(f).
#define OPFORGE_KERNEL(TYPE, MAKE, CHECK)                                         \
  static const ::opforge_cpu::KernelRegistrar opforge_kernel_registrar_##TYPE = \
      ::opforge_cpu::KernelSpec(#TYPE, MAKE, CHECK)

// Every registered kernel, by type name.
const std::map<std::string, KernelEntry>& kernel_registry();
const KernelEntry* find_kernel(const std::string& type);
// Registration mistakes (a type registered twice): the module refuses to import when not empty.
const std::vector<std::string>& kernel_registry_errors();

// Common checks.
std::string check_float(const NodeDesc& n);     // input 0 is f32
std::string check_numeric(const NodeDesc& n);   // input 0 is not boolean/f16/bf16
std::string check_any(const NodeDesc& n);

}  // namespace opforge_cpu
