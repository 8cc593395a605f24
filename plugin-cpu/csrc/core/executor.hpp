// The program a model compiles to: tensors with fixed shapes, kernel steps in execution order,
// and a memory plan (one arena per request, buffers reused by liveness, in-place where legal).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dnnl_util.hpp"  // RunBuffer
#include "core/kernel.hpp"
#include "core/primitive_log.hpp"

namespace opforge_cpu {

// A failure while running one node; Python turns it into opforge.errors.KernelError.
struct NodeFailure : std::runtime_error {
  NodeFailure(const std::string& node, const std::string& type, const std::string& what)
      : std::runtime_error("node '" + node + "' (" + type + ") on CPU: " + what), node(node), type(type) {}
  std::string node, type;
};

// A failure while building a node's kernel; Python turns it into UnsupportedOpError.
struct NodeCompileFailure : std::runtime_error {
  NodeCompileFailure(const std::string& node, const std::string& type, const std::string& what)
      : std::runtime_error("node '" + node + "' (" + type + "): " + what), node(node), type(type) {}
  std::string node, type;
};

using KernelMaker = std::function<std::unique_ptr<Kernel>(NodeDesc&)>;

struct NodeSpec {
  std::string name, type, version;
  Attrs attrs;
  std::vector<int> inputs, outputs;
  std::vector<std::string> fused_names;  // original graph nodes this step stands for
  KernelMaker maker;                      // set for third-party kernels; else the built-in table
};

struct ProgTensor {
  TensorInfo info;
  const void* const_data = nullptr;
  int producer = -1;   // step index; -1 for inputs and constants
  int last_use = -1;   // last step reading it
  int buffer = -1;     // arena buffer, -1 for constants
  bool is_input = false;
  bool is_output = false;
  bool released = false;  // a constant every reader packed: its data was dropped after packing
  // No arena buffer: read in the caller's array (a model input) or written straight into the
  // array returned to the caller (a model output produced by a step); see Program::run.
  bool in_caller = false;
};

// Where a step sees a tensor: its input or output `slot`.
struct IoSlot {
  int step;
  int slot;
  bool out;
};

struct Step {
  std::string name, type;
  std::vector<std::string> fused_names;
  std::unique_ptr<Kernel> kernel;
  std::vector<int> ins, outs;
  int precopy_from = -1;  // tensor copied into outs[0] first (oneDNN sum post-op without aliasing)
  // OpenMP threads it runs with (and its primitives were created for): 1 for small steps
  // (step_threads.hpp), else the program's count.
  int threads = 1;
};

class Program;

// Per-request memory: one arena, views of every tensor, and each kernel's bound data.
class State {
 public:
  explicit State(const Program& p);
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // The request's arena (every non-constant tensor) and the steps' shared scratchpad. Declared
  // first so that they are constructed first and freed last, after every view and Bound below
  // that points into them, also when the constructor throws after allocating them.
  RunBuffer arena, scratch;
  std::vector<TensorView> views;                  // by tensor
  std::vector<std::vector<TensorView>> step_in;   // by step
  std::vector<std::vector<TensorView>> step_out;
  std::vector<std::unique_ptr<Bound>> bound;
  std::vector<double> times_ms;                   // last inference, by step (profiling)
  dnnl::stream stream;
  std::vector<int> rebind;                        // steps whose views changed (Program::run)
};

class Program {
 public:
  int add_tensor(DType dtype, const Shape& shape, const void* const_data);
  void add_node(NodeSpec spec);
  void set_io(const std::vector<int>& inputs, const std::vector<int>& outputs);
  void finalize(int num_threads, bool profiling);
  // Called (without the GIL) with each constant tensor released during finalize: every kernel
  // reading it packed its own copy, so the owner of `const_data` may free it.
  std::function<void(int)> on_release;

  std::unique_ptr<State> create_state() const;
  // Runs every step; no GIL needed. The steps read `inputs` (C-contiguous, the program's types
  // and sizes) where they are, and write each model output j with output_direct(j) into
  // outputs[j] (a new array the caller returns; the others are left in the state's views).
  void run(State& st, const std::vector<const void*>& inputs, const std::vector<void*>& outputs) const;
  // Model output j is written into the caller's array (produced by a step, first of its name).
  bool output_direct(size_t j) const { return output_direct_.at(j) != 0; }

  const std::vector<ProgTensor>& tensors() const { return tensors_; }
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  size_t arena_bytes() const { return arena_bytes_; }
  size_t scratch_bytes() const { return scratch_bytes_; }
  const std::vector<size_t>& offsets() const { return buffer_offset_; }
  int num_threads() const { return num_threads_; }
  bool profiling() const { return profiling_; }
  int64_t python_calls() const { return python_calls_.load(); }
  // Every oneDNN primitive its kernels created, in step order, with the implementation oneDNN
  // chose (primitive_log.hpp).
  const std::vector<PrimitiveRecord>& primitives() const { return primitives_; }
  std::atomic<int64_t>& python_calls_counter() const { return python_calls_; }

 private:
  void build_kernels();
  void plan_memory();

  std::vector<ProgTensor> tensors_;
  std::vector<NodeSpec> specs_;
  std::vector<Step> steps_;
  std::vector<int> inputs_, outputs_;
  std::vector<std::vector<IoSlot>> io_slots_;  // by tensor: the steps' views of in_caller tensors
  std::vector<char> output_direct_;            // by model output
  std::vector<size_t> buffer_size_, buffer_offset_;
  size_t arena_bytes_ = 0, scratch_bytes_ = 0;
  int num_threads_ = 1;
  bool profiling_ = false;
  bool finalized_ = false;
  mutable std::atomic<int64_t> python_calls_{0};
  std::vector<PrimitiveRecord> primitives_;
};

}  // namespace opforge_cpu
