// The Python boundary: building programs from the lowered graph, running them with the GIL
// released, and adapting third-party kernels (NumPy callables, C ABI capsules).

// Every Python reference this file copies or drops must be under the GIL, also in the parts the
// executor runs without it (Program::finalize, the steps). pybind11 checks that on every
// reference change of a py::handle when this is defined (its default in builds without NDEBUG;
// the Release build defines NDEBUG): a violation prints a message naming the call and throws
// (std::terminate in a destructor) instead of racing another thread's refcount or, on Python
// 3.12, freeing without a thread state. One PyGILState_Check per change, a few dozen per
// inference. Only this file includes pybind11, so the definition is the same in every unit.
// (test_cpu_custom_kernels.py test_python_references_are_taken_under_the_gil)
#ifndef PYBIND11_ASSERT_GIL_HELD_INCREF_DECREF
#define PYBIND11_ASSERT_GIL_HELD_INCREF_DECREF
#endif
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cxxabi.h>  // abi::__forced_unwind
#include <unistd.h>  // pause

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/dnnl_util.hpp"  // alloc_run_buffer
#include "core/executor.hpp"
#include "core/host_isa.hpp"
#include "core/keep_warm.hpp"
#include "core/tbb_contention.hpp"
#include "core/threading.hpp"
#include "core/isa_clones.hpp"
#include "opforge_cpu/kernel_abi.h"

namespace py = pybind11;
using namespace opforge_cpu;

namespace {

// ------------------------------------------------------------------ the GIL at interpreter exit
// CPython up to 3.13 ends a thread that asks for the GIL back once the runtime is finalizing
// (a daemon thread at exit) with pthread_exit, which unwinds the thread's C++ frames like an
// exception. From pybind11's gil_scoped_release destructor (noexcept) that was std::terminate:
// every process that exited while a request ran in a daemon thread died with "terminate called
// without an active exception" (SIGABRT); from elsewhere, the unwinding would run our
// destructors' Py_DECREFs without the GIL. So this file takes the GIL back only through
// take_gil(): a thread that would be ended parks instead, forever (the process is exiting;
// CPython 3.14 parks such threads itself). The atexit hook (module init), which CPython runs
// before it marks the runtime finalizing, sets g_exiting and then waits, without the GIL, until
// the threads already past the check have the GIL: after it, no thread but the exiting one
// reaches PyEval_RestoreThread here. (The Py_IsFinalizing test covers an exit without the hook.)
std::atomic<bool> g_exiting{false};
std::atomic<int> g_taking{0};
std::atomic<std::thread::id> g_exit_thread{};

[[noreturn]] void park_thread() {
  for (;;) pause();
}

bool runtime_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

template <class TakeGil>
void take_gil(TakeGil&& take) {
  g_taking.fetch_add(1);
  if ((g_exiting.load() || runtime_finalizing()) && std::this_thread::get_id() != g_exit_thread.load()) {
    g_taking.fetch_sub(1);
    park_thread();
  }
  take();
  g_taking.fetch_sub(1);
}

// The atexit hook (called with the GIL, before finalization).
void on_interpreter_exit() {
  g_exit_thread.store(std::this_thread::get_id());
  g_exiting.store(true);
  if (g_taking.load() == 0) return;
  PyThreadState* ts = PyEval_SaveThread();  // not finalizing yet: a plain release is safe
  while (g_taking.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  PyEval_RestoreThread(ts);
}

// Releases the GIL for a scope (the C++ work of a compile or an inference).
class GilRelease {
 public:
  GilRelease() : ts_(PyEval_SaveThread()) {}
  ~GilRelease() {
    take_gil([this] { PyEval_RestoreThread(ts_); });
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* ts_;
};

// Holds the GIL for a scope, from a thread that may or may not hold it. A thread that holds it
// already takes nothing, so it must not park: parked with the GIL (a daemon thread dropping a
// program after the exit hook), it would hang the exit.
class GilAcquire {
 public:
  GilAcquire() {
    if (PyGILState_Check()) state_ = PyGILState_Ensure();
    else take_gil([this] { state_ = PyGILState_Ensure(); });
  }
  ~GilAcquire() { PyGILState_Release(state_); }
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  PyGILState_STATE state_{};
};

// ------------------------------------------------------------------ conversions
py::dtype np_dtype(DType t) {
  static py::object* cache[13] = {};
  int i = static_cast<int>(t);
  if (!cache[i]) {
    py::object d;
    if (t == DType::bf16) {
      d = py::module_::import("numpy").attr("dtype")(py::module_::import("ml_dtypes").attr("bfloat16"));
    } else {
      static const char* names[] = {"bool", "float16", "", "float32", "float64", "int8", "int16",
                                    "int32", "int64", "uint8", "uint16", "uint32", "uint64"};
      d = py::module_::import("numpy").attr("dtype")(names[i]);
    }
    cache[i] = new py::object(d);  // intentionally immortal: freed never, like numpy's own dtypes
  }
  return py::reinterpret_borrow<py::dtype>(*cache[i]);
}

Attrs to_attrs(const py::dict& d);

// Fused nodes travel as a list of (op type, attributes dict) pairs ("post_ops" of a fused
// Convolution/MatMul); C++ builds each one's post-op from its kernel registration.
bool is_fused_ops(const py::sequence& seq) {
  if (seq.size() == 0) return false;
  for (auto x : seq) {
    if (!py::isinstance<py::tuple>(x) && !py::isinstance<py::list>(x)) return false;
    auto pair = py::reinterpret_borrow<py::sequence>(x);
    if (pair.size() != 2 || !py::isinstance<py::str>(pair[0]) || !py::isinstance<py::dict>(pair[1])) return false;
  }
  return true;
}

AttrValue to_attr(py::handle v) {
  if (v.is_none()) return std::monostate{};
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    auto seq = py::reinterpret_borrow<py::sequence>(v);
    if (is_fused_ops(seq)) {
      std::vector<FusedOp> out;
      for (auto x : seq) {
        auto pair = py::reinterpret_borrow<py::sequence>(x);
        out.push_back({pair[0].cast<std::string>(),
                       std::make_shared<const Attrs>(to_attrs(py::reinterpret_borrow<py::dict>(pair[1])))});
      }
      return out;
    }
    bool any_float = false, all_str = seq.size() > 0;
    for (auto x : seq) {
      any_float = any_float || py::isinstance<py::float_>(x);
      all_str = all_str && py::isinstance<py::str>(x);
    }
    if (all_str) return seq.cast<std::vector<std::string>>();
    if (any_float) {
      std::vector<double> out;
      for (auto x : seq) out.push_back(x.cast<double>());
      return out;
    }
    std::vector<int64_t> out;
    for (auto x : seq) out.push_back(x.cast<int64_t>());
    return out;
  }
  throw CompileFailure("attribute value of Python type " + std::string(py::str(v.get_type().attr("__name__"))) +
                       " cannot be passed to a kernel");
}

Attrs to_attrs(const py::dict& d) {
  Attrs a;
  for (auto kv : d) a.set(kv.first.cast<std::string>(), to_attr(kv.second));
  return a;
}

// ------------------------------------------------------------------ Python references
// One Python reference that C++ code may copy, move and drop on any thread, with or without the
// GIL: the copies share it through a std::shared_ptr (atomic counts, no Python refcount), and
// the last one to go drops it under the GIL. Node specs and kernels hold their Python objects
// this way, because Program::finalize copies the specs' makers into kernels and clears the specs
// without the GIL (PyProgram::finalize releases it), and a py::object copied or destroyed there
// changed a refcount without the GIL.
class SharedPyRef {
 public:
  SharedPyRef() = default;
  // Call with the GIL (it takes over `obj`'s reference; no refcount changes).
  explicit SharedPyRef(py::object obj)
      : p_(new py::object(std::move(obj)), [](py::object* o) {
          GilAcquire gil;
          delete o;
        }) {}
  // Use under the GIL.
  const py::object& get() const { return *p_; }

 private:
  std::shared_ptr<py::object> p_;
};

// ------------------------------------------------------------------ NumPy callable kernels
// The documented slow path: the executor takes the GIL for this node only, hands the callable
// copies of its inputs, and checks what comes back against the inferred outputs. Built by
// Program::finalize without the GIL: it holds its callable and attributes as SharedPyRefs.
class PythonKernel : public Kernel {
 public:
  PythonKernel(SharedPyRef fn, SharedPyRef attrs, const NodeDesc& n) : fn_(std::move(fn)), attrs_(std::move(attrs)) {
    for (const auto& o : n.outputs) out_.push_back(o);
  }
  bool needs_gil() const override { return true; }
  std::string impl_name() const override { return "python"; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    GilAcquire gil;
    if (ctx.python_calls) ctx.python_calls->fetch_add(1);
    std::string failure;
    try {
      py::list args;
      // Inputs: copies, so a kernel that writes into them cannot corrupt the request's memory.
      size_t n_inputs = in_count_;
      for (size_t i = 0; i < n_inputs; ++i) {
        const TensorView& v = in[i];
        std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.end());
        args.append(py::array(np_dtype(v.dtype), shape, v.data));
      }
      // The kernel's Python code may drop and re-take the GIL; at exit CPython ends a daemon
      // thread there with pthread_exit, whose unwinding would destroy `args` and the rest
      // without the GIL: park the thread at once instead (see take_gil). The call goes through
      // the C API so that no C++ temporary of its own is unwound either.
      PyObject* raw = nullptr;
      try {
        raw = PyObject_CallFunctionObjArgs(fn_.get().ptr(), attrs_.get().ptr(), args.ptr(), nullptr);
      } catch (abi::__forced_unwind&) {
        park_thread();
      }
      if (!raw) throw py::error_already_set();
      py::object res = py::reinterpret_steal<py::object>(raw);
      py::list outs;
      if (py::isinstance<py::list>(res) || py::isinstance<py::tuple>(res)) {
        for (auto r : res) outs.append(r);
      } else {
        failure = "returned " + std::string(py::str(res.get_type().attr("__name__"))) +
                  ", expected a list of arrays";
      }
      if (failure.empty() && outs.size() != out_.size()) {
        failure = "returned " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(out_.size());
      }
      for (size_t i = 0; failure.empty() && i < out_.size(); ++i) {
        py::array arr = py::array::ensure(outs[i], py::array::c_style);
        if (!arr) {
          failure = "output " + std::to_string(i) + " is not an array";
          break;
        }
        if (!arr.dtype().is(np_dtype(out_[i].dtype)) && !arr.dtype().equal(np_dtype(out_[i].dtype))) {
          failure = "output " + std::to_string(i) + " has element type " + std::string(py::str(arr.dtype())) +
                    ", inferred " + std::string(py::str(np_dtype(out_[i].dtype)));
          break;
        }
        Shape got(arr.shape(), arr.shape() + arr.ndim());
        if (got != out_[i].shape) {
          failure = "output " + std::to_string(i) + " has shape " + shape_str(got) + ", inferred " +
                    shape_str(out_[i].shape);
          break;
        }
        std::memcpy(out[i].data, arr.data(), out[i].bytes());
      }
    } catch (py::error_already_set& err) {
      failure = "Python kernel raised " + std::string(err.what());
    }
    if (!failure.empty()) throw KernelFailure(failure);
  }

  size_t in_count_ = 0;

 private:
  SharedPyRef fn_, attrs_;
  std::vector<TensorInfo> out_;
};

// ------------------------------------------------------------------ C ABI kernels
struct AbiBound : Bound {
  std::vector<opforge_tensor> in, out;
};

class AbiKernel : public Kernel {
 public:
  // Built by Program::finalize without the GIL: the capsule (which keeps the descriptor's owner
  // alive) is held as a SharedPyRef, so neither this nor a refusal by create() changes its
  // refcount here.
  AbiKernel(const opforge_cpu_kernel* desc, SharedPyRef capsule, const NodeDesc& n)
      : desc_(desc), capsule_(std::move(capsule)) {
    // Attributes and shapes in C form, alive while create() runs.
    std::vector<std::string> keys;
    std::vector<std::vector<int64_t>> ints;
    std::vector<std::vector<double>> floats;
    std::vector<std::string> strs;
    const auto& all = n.attrs.all();
    keys.reserve(all.size());
    ints.reserve(all.size());
    floats.reserve(all.size());
    strs.reserve(all.size());
    std::vector<opforge_attr> attrs;
    for (const auto& kv : all) {
      keys.push_back(kv.first);
      ints.emplace_back();
      floats.emplace_back();
      strs.emplace_back();
      opforge_attr a{keys.back().c_str(), OPFORGE_ATTR_NONE, 0, nullptr, nullptr, nullptr};
      const auto& v = kv.second;
      if (auto p = std::get_if<bool>(&v)) { ints.back() = {*p ? 1 : 0}; a.kind = OPFORGE_ATTR_BOOL; }
      else if (auto p = std::get_if<int64_t>(&v)) { ints.back() = {*p}; a.kind = OPFORGE_ATTR_INT; }
      else if (auto p = std::get_if<double>(&v)) { floats.back() = {*p}; a.kind = OPFORGE_ATTR_FLOAT; }
      else if (auto p = std::get_if<std::string>(&v)) { strs.back() = *p; a.kind = OPFORGE_ATTR_STRING; }
      else if (auto p = std::get_if<std::vector<int64_t>>(&v)) { ints.back() = *p; a.kind = OPFORGE_ATTR_INTS; }
      else if (auto p = std::get_if<std::vector<double>>(&v)) { floats.back() = *p; a.kind = OPFORGE_ATTR_FLOATS; }
      a.count = a.kind == OPFORGE_ATTR_FLOATS || a.kind == OPFORGE_ATTR_FLOAT ? static_cast<int64_t>(floats.back().size())
                                                                              : static_cast<int64_t>(ints.back().size());
      a.ints = ints.back().data();
      a.floats = floats.back().data();
      a.string = a.kind == OPFORGE_ATTR_STRING ? strs.back().c_str() : nullptr;
      attrs.push_back(a);
    }
    for (const auto& i : n.inputs) in_shapes_.push_back(i.info.shape);
    for (const auto& o : n.outputs) out_shapes_.push_back(o.shape);
    std::vector<opforge_tensor> ins, outs;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      ins.push_back({static_cast<int32_t>(n.inputs[i].info.dtype), static_cast<int32_t>(in_shapes_[i].size()),
                     in_shapes_[i].data(), nullptr});
    for (size_t i = 0; i < n.outputs.size(); ++i)
      outs.push_back({static_cast<int32_t>(n.outputs[i].dtype), static_cast<int32_t>(out_shapes_[i].size()),
                      out_shapes_[i].data(), nullptr});
    in_template_ = ins;
    out_template_ = outs;
    opforge_node_info info{n.name.c_str(), attrs.data(), static_cast<int64_t>(attrs.size()), ins.data(),
                           static_cast<int64_t>(ins.size()), outs.data(), static_cast<int64_t>(outs.size())};
    char err[1024] = {0};
    instance_ = desc_->create(&info, err, sizeof(err));
    if (!instance_) throw CompileFailure(std::string(desc_->name ? desc_->name : "kernel") + ": " + err);
  }
  // (the instance goes before the capsule member, which may drop the last reference)
  ~AbiKernel() override {
    if (instance_ && desc_->destroy) desc_->destroy(instance_);
  }
  std::string impl_name() const override { return std::string("abi:") + (desc_->name ? desc_->name : "?"); }

  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                              void*) override {
    auto b = std::make_unique<AbiBound>();
    b->in = in_template_;
    b->out = out_template_;
    for (size_t i = 0; i < n_in; ++i) b->in[i].data = in[i].data;
    for (size_t i = 0; i < n_out; ++i) b->out[i].data = out[i].data;
    return b;
  }

  bool rebind(Bound* bound, const TensorView* in, size_t n_in, const TensorView* out, size_t n_out) override {
    auto* b = static_cast<AbiBound*>(bound);
    for (size_t i = 0; i < n_in; ++i) b->in[i].data = in[i].data;
    for (size_t i = 0; i < n_out; ++i) b->out[i].data = out[i].data;
    return true;
  }

  void run(RunContext&, const TensorView*, TensorView*, Bound* bound) override {
    auto* b = static_cast<AbiBound*>(bound);
    char err[1024] = {0};
    int rc = desc_->compute(instance_, b->in.data(), static_cast<int64_t>(b->in.size()), b->out.data(),
                            static_cast<int64_t>(b->out.size()), err, sizeof(err));
    if (rc != 0) throw KernelFailure(std::string(desc_->name ? desc_->name : "kernel") + " failed: " + err);
  }

 private:
  const opforge_cpu_kernel* desc_;
  SharedPyRef capsule_;
  void* instance_ = nullptr;
  std::vector<Shape> in_shapes_, out_shapes_;
  std::vector<opforge_tensor> in_template_, out_template_;
};

// ------------------------------------------------------------------ Python-facing objects
// Large output blocks of one request, reused once every array handed out over them is gone.
// A fresh 64 MB NumPy array costs its page faults on every inference (~10 ms, as much as a
// simple kernel over it); a block that comes back here is already mapped. A block returns only
// when its last array (or view of one) dies, so a returned array never shares memory with a
// later inference's output.
struct OutputPool {
  static constexpr size_t kMinBytes = size_t{1} << 20;  // smaller: malloc reuses mapped heap
  static constexpr size_t kMaxFree = 8;                  // blocks kept, per request
  std::mutex mu;
  std::vector<std::pair<size_t, void*>> free_blocks;
  ~OutputPool() {
    for (auto& b : free_blocks) free_run_buffer(b.second);
  }
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < free_blocks.size(); ++i) {
        if (free_blocks[i].first != bytes) continue;
        void* p = free_blocks[i].second;
        free_blocks.erase(free_blocks.begin() + static_cast<std::ptrdiff_t>(i));
        return p;
      }
    }
    // (from 4 MB up in advised 2 MB pages, as the arena: NumPy does the same for its own arrays)
    return alloc_run_buffer(bytes);
  }
  void give_back(size_t bytes, void* p) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (free_blocks.size() < kMaxFree) {
        free_blocks.emplace_back(bytes, p);
        return;
      }
    }
    free_run_buffer(p);
  }
};

// What an output array's base capsule owns: its block, and the pool it goes back to (kept alive
// by the block when the request is gone first).
struct PooledBlock {
  std::shared_ptr<OutputPool> pool;
  size_t bytes;
  void* data;
};

struct PyState {
  std::unique_ptr<State> state;
  std::shared_ptr<OutputPool> pool = std::make_shared<OutputPool>();
};

// A new C-contiguous array for an output of `bytes`: a pooled block for large ones.
py::array new_output_array(PyState& st, DType dtype, const Shape& shape_, size_t bytes) {
  std::vector<py::ssize_t> shape(shape_.begin(), shape_.end());
  if (bytes < OutputPool::kMinBytes) return py::array(np_dtype(dtype), shape);
  auto* block = new PooledBlock{st.pool, bytes, nullptr};
  try {
    block->data = st.pool->take(bytes);
  } catch (...) {
    delete block;
    throw;
  }
  py::capsule owner(block, [](void* p) {
    auto* b = static_cast<PooledBlock*>(p);
    b->pool->give_back(b->bytes, b->data);
    delete b;
  });
  return py::array(np_dtype(dtype), shape, block->data, owner);
}

class PyProgram {
 public:
  PyProgram() {
    // A constant every reader packed: drop our reference so only the packed copy remains.
    prog_.on_release = [this](int t) {
      GilAcquire gil;
      if (t >= 0 && static_cast<size_t>(t) < keep_.size()) keep_[t] = py::object();
    };
  }

  int add_tensor(const std::string& dtype, const std::vector<int64_t>& shape, py::object value) {
    const void* data = nullptr;
    py::array arr;
    if (!value.is_none()) {
      arr = py::array::ensure(value, py::array::c_style);
      if (!arr) throw CompileFailure("constant is not a contiguous array");
      data = arr.data();
    }
    int t = prog_.add_tensor(dtype_from_name(dtype), shape, data);
    if (data) {
      if (keep_.size() <= static_cast<size_t>(t)) keep_.resize(t + 1);
      keep_[t] = std::move(arr);
    }
    return t;
  }

  void add_node(const std::string& name, const std::string& type, const std::string& version, py::dict attrs,
                std::vector<int> inputs, std::vector<int> outputs, std::vector<std::string> fused,
                py::object python_kernel, py::object attrs_object, py::object capsule) {
    NodeSpec s;
    s.name = name;
    s.type = type;
    s.version = version;
    s.attrs = to_attrs(attrs);
    s.inputs = std::move(inputs);
    s.outputs = std::move(outputs);
    s.fused_names = std::move(fused);
    if (!capsule.is_none()) {
      auto* desc = static_cast<const opforge_cpu_kernel*>(
          PyCapsule_GetPointer(capsule.ptr(), OPFORGE_CPU_KERNEL_CAPSULE_NAME));
      if (!desc) {
        PyErr_Clear();
        throw CompileFailure("the kernel capsule is not named '" OPFORGE_CPU_KERNEL_CAPSULE_NAME "'");
      }
      // The makers run (and the specs holding them are cleared) in Program::finalize, without
      // the GIL: they capture SharedPyRefs, taken here under it, never py::objects.
      s.maker = [desc, cap = SharedPyRef(capsule)](NodeDesc& n) -> std::unique_ptr<Kernel> {
        return std::make_unique<AbiKernel>(desc, cap, n);
      };
    } else if (!python_kernel.is_none()) {
      s.maker = [fn = SharedPyRef(python_kernel), attrs = SharedPyRef(attrs_object)](
                    NodeDesc& n) -> std::unique_ptr<Kernel> {
        auto k = std::make_unique<PythonKernel>(fn, attrs, n);
        k->in_count_ = n.inputs.size();
        return k;
      };
    }
    prog_.add_node(std::move(s));
  }

  void set_io(const std::vector<int>& ins, const std::vector<int>& outs) { prog_.set_io(ins, outs); }

  void finalize(int num_threads, bool profiling) {
    // Building may run oneDNN's JIT and weight reorders: no Python objects are touched (the
    // makers hold SharedPyRefs). GilRelease: see take_gil.
    GilRelease nogil;
    prog_.finalize(num_threads, profiling);
  }

  PyState create_state() {
    GilRelease nogil;
    return PyState{prog_.create_state()};
  }

  py::list run(PyState& st, const std::vector<py::array>& inputs) {
    if (inputs.size() != prog_.inputs().size())
      throw std::invalid_argument("expected " + std::to_string(prog_.inputs().size()) + " inputs");
    std::vector<const void*> ptrs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& t = prog_.tensors()[prog_.inputs()[i]];
      const py::array& a = inputs[i];
      if (!(a.flags() & py::array::c_style)) throw std::invalid_argument("input " + std::to_string(i) + " is not C-contiguous");
      if (static_cast<size_t>(a.nbytes()) != t.info.bytes())
        throw std::invalid_argument("input " + std::to_string(i) + " has " + std::to_string(a.nbytes()) +
                                    " bytes, the program expects " + std::to_string(t.info.bytes()));
      ptrs.push_back(a.data());
    }
    // New arrays every time (large ones over blocks no live array uses any more, see
    // OutputPool), so a returned output never aliases memory the next inference writes; the
    // program writes most outputs straight into them (output_direct).
    const auto& out_ids = prog_.outputs();
    std::vector<py::array> arrays;
    std::vector<void*> out_ptrs(out_ids.size(), nullptr);
    arrays.reserve(out_ids.size());
    for (size_t j = 0; j < out_ids.size(); ++j) {
      const TensorView& v = st.state->views[out_ids[j]];
      arrays.push_back(new_output_array(st, v.dtype, v.shape, v.bytes()));
      if (prog_.output_direct(j)) out_ptrs[j] = arrays.back().mutable_data();
    }
    {
      GilRelease nogil;  // (not pybind11's: see take_gil)
      prog_.run(*st.state, ptrs, out_ptrs);
    }
    py::list outs(out_ids.size());
    for (size_t j = 0; j < out_ids.size(); ++j) {
      if (!prog_.output_direct(j)) {
        const TensorView& v = st.state->views[out_ids[j]];
        if (v.bytes()) std::memcpy(arrays[j].mutable_data(), v.data, v.bytes());
      }
      outs[j] = std::move(arrays[j]);
    }
    return outs;
  }

  py::list profile(const PyState& st) const {
    py::list rows;
    const auto& steps = prog_.steps();
    for (size_t s = 0; s < steps.size(); ++s) {
      py::dict d;
      d["node_name"] = steps[s].name;
      d["node_type"] = steps[s].type;
      d["exec_type"] = steps[s].kernel->impl_name();
      d["real_time_ms"] = st.state->times_ms[s];
      d["fused_names"] = steps[s].fused_names;
      d["status"] = "EXECUTED";
      rows.append(d);
    }
    return rows;
  }

  py::list steps() const {
    py::list rows;
    for (const auto& s : prog_.steps()) {
      py::dict d;
      d["name"] = s.name;
      d["type"] = s.type;
      d["impl"] = s.kernel->impl_name();
      d["threads"] = s.threads;
      d["fused_names"] = s.fused_names;
      d["inputs"] = s.ins;
      d["outputs"] = s.outs;
      rows.append(d);
    }
    return rows;
  }

  py::dict memory_plan() const {
    py::dict d;
    d["arena_bytes"] = prog_.arena_bytes();
    d["scratch_bytes"] = prog_.scratch_bytes();
    py::list bufs;
    for (const auto& t : prog_.tensors()) bufs.append(t.buffer);
    d["tensor_buffers"] = bufs;
    size_t total = 0;
    for (const auto& t : prog_.tensors())
      if (t.buffer >= 0) total += t.info.bytes();
    d["unplanned_bytes"] = total;
    return d;
  }

  int64_t python_calls() const { return prog_.python_calls(); }

  // Every oneDNN primitive the program's kernels created and the implementation each got
  // (core/primitive_log.hpp): the compile-time check for reference implementations reads it.
  py::list primitives() const {
    py::list rows;
    for (const auto& r : prog_.primitives()) {
      py::dict d;
      d["node"] = r.node;
      d["node_type"] = r.node_type;
      d["kind"] = r.kind;
      d["impl"] = r.impl;
      d["src"] = r.src;
      d["weights"] = r.weights;
      d["dst"] = r.dst;
      d["reference"] = r.reference;
      d["heavy"] = r.heavy;
      rows.append(d);
    }
    return rows;
  }

  // The array constant tensor `t` reads (None for non-constants and released constants).
  py::object constant(int t) const {
    if (t < 0 || static_cast<size_t>(t) >= keep_.size() || !keep_[t]) return py::none();
    return keep_[t];
  }

  // Constant tensors dropped after every reader packed them.
  std::vector<int> released() const {
    std::vector<int> out;
    const auto& ts = prog_.tensors();
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].released) out.push_back(static_cast<int>(i));
    return out;
  }

 private:
  Program prog_;
  std::vector<py::object> keep_;  // by tensor: the arrays constants point into
};

std::string check_node(const std::string& type, const std::string& version, py::dict attrs,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                       const std::vector<py::object>& values,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& outputs) {
  const KernelEntry* e = find_kernel(type);
  if (!e) return "the CPU device has no kernel for " + type;
  NodeDesc n;
  n.type = type;
  n.version = version;
  std::vector<py::array> keep;
  try {
    n.attrs = to_attrs(attrs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      InputDesc d;
      d.info.dtype = dtype_from_name(inputs[i].first);
      d.info.shape = inputs[i].second;
      if (i < values.size() && !values[i].is_none()) {
        py::array arr = py::array::ensure(values[i], py::array::c_style);
        keep.push_back(arr);
        d.const_data = arr.data();
      }
      n.inputs.push_back(d);
    }
    for (const auto& o : outputs) {
      TensorInfo t;
      t.dtype = dtype_from_name(o.first);
      t.shape = o.second;
      n.outputs.push_back(t);
    }
    return e->check ? e->check(n) : std::string();
  } catch (const std::exception& err) {
    return err.what();
  }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "opforge CPU executor (C++, oneDNN)";
  // A kernel registered twice (two files claiming one op) is a build mistake: refuse to load
  // rather than run whichever registrar happened to come first.
  if (!kernel_registry_errors().empty()) {
    std::string why = "opforge_cpu._core: broken kernel registry:";
    for (const auto& e : kernel_registry_errors()) why += " " + e + ";";
    throw py::import_error(why);
  }
  // Threads that would re-take the GIL once the runtime finalizes park instead (take_gil).
  py::module_::import("atexit").attr("register")(py::cpp_function(&on_interpreter_exit));
  // Intentionally immortal, like np_dtype's cache: a static py::object is destroyed by exit()
  // after the interpreter is gone, where its Py_DECREF has no GIL to hold (and the GIL
  // assertion above would make that destructor throw).
  static auto* node_failure = new py::exception<NodeFailure>(m, "NodeFailure", PyExc_RuntimeError);
  static auto* compile_failure = new py::exception<NodeCompileFailure>(m, "NodeCompileFailure", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NodeFailure& e) {
      py::set_error(*node_failure, e.what());
    } catch (const NodeCompileFailure& e) {
      py::set_error(*compile_failure, e.what());
    } catch (const CompileFailure& e) {
      py::set_error(*compile_failure, e.what());
    }
  });

  py::class_<PyState>(m, "State");
  py::class_<PyProgram>(m, "Program")
      .def(py::init<>())
      .def("add_tensor", &PyProgram::add_tensor, py::arg("dtype"), py::arg("shape"), py::arg("value") = py::none())
      .def("add_node", &PyProgram::add_node, py::arg("name"), py::arg("type"), py::arg("version"), py::arg("attrs"),
           py::arg("inputs"), py::arg("outputs"), py::arg("fused_names"), py::arg("python_kernel") = py::none(),
           py::arg("attrs_object") = py::none(), py::arg("capsule") = py::none())
      .def("set_io", &PyProgram::set_io)
      .def("finalize", &PyProgram::finalize)
      .def("create_state", &PyProgram::create_state)
      .def("run", &PyProgram::run)
      .def("profile", &PyProgram::profile)
      .def("steps", &PyProgram::steps)
      .def("memory_plan", &PyProgram::memory_plan)
      .def("constant", &PyProgram::constant)
      .def("released", &PyProgram::released)
      .def("primitives", &PyProgram::primitives)
      .def_property_readonly("python_calls", &PyProgram::python_calls);

  m.def("check_node", &check_node);
  m.def("kernel_types", []() {
    std::vector<std::string> out;
    for (const auto& kv : kernel_registry()) out.push_back(kv.first);
    return out;
  });
  // Ops whose kernel registered a post-op: the fusion pass folds them into the Convolution or
  // MatMul before them and passes (type, attributes) pairs in its "post_ops" attribute.
  m.def("post_op_types", []() {
    std::vector<std::string> out;
    for (const auto& kv : kernel_registry())
      if (kv.second.post_op) out.push_back(kv.first);
    return out;
  });
  m.def("abi_version", []() { return OPFORGE_CPU_KERNEL_ABI_VERSION; });
  m.def("capsule_abi_version", [](py::object capsule) -> int64_t {
    void* p = PyCapsule_GetPointer(capsule.ptr(), OPFORGE_CPU_KERNEL_CAPSULE_NAME);
    if (!p) {
      PyErr_Clear();
      return -1;
    }
    return static_cast<const opforge_cpu_kernel*>(p)->abi_version;
  });
  m.def("max_threads", []() { return threading_num_procs(); });
  // "omp" or "tbb": the threading runtime this build's oneDNN and loops run on (CMake option
  // OPFORGE_CPU_THREADING)
  m.def("threading_runtime", []() { return std::string(threading_runtime()); });
  // The TBB build's keep-warm cold-start waits so far in this process (core/keep_warm.hpp):
  // {"checked": runs that looked for a spinner awake on another CPU, "waited": runs that found
  // none and waited for one, "timed_out": waits that ran out}
  m.def("keep_warm_waits", []() {
    const KeepWarmWaits w = keep_warm_waits();
    py::dict d;
    d["checked"] = w.checked;
    d["waited"] = w.waited;
    d["timed_out"] = w.timed_out;
    return d;
  });
  // The TBB build's loaded mode so far in this process (core/tbb_contention.hpp): {"enabled":
  // the switch, "redirected": libtbb's sched_yield goes through us, "checks": looks at a
  // worker's schedstat, "loaded_modes": times loaded mode began, "spun_yields": yields spun
  // instead of made, "workers": TBB workers seen}
  m.def("tbb_contention_stats", []() {
    const TbbContentionStats s = tbb_contention_stats();
    py::dict d;
    d["enabled"] = tbb_contention_enabled();
    d["redirected"] = tbb_contention_redirected();
    d["checks"] = s.checks;
    d["loaded_modes"] = s.loaded_modes;
    d["spun_yields"] = s.spun_yields;
    d["workers"] = s.workers;
    return d;
  });
  // The instruction set oneDNN dispatches to here (cpuid, capped by DNNL_MAX_CPU_ISA): the
  // benchmark prints it, and INFERENCE_PRECISION_HINT=bf16 needs a native bf16 one.
  m.def("cpu_isa", []() -> std::string {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::sse41: return "sse41";
      case dnnl::cpu_isa::avx: return "avx";
      case dnnl::cpu_isa::avx2: return "avx2";
      case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
      case dnnl::cpu_isa::avx2_vnni_2: return "avx2_vnni_2";
      case dnnl::cpu_isa::avx512_core: return "avx512_core";
      case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
      case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
      case dnnl::cpu_isa::avx512_core_fp16: return "avx512_core_fp16";
      case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
      case dnnl::cpu_isa::avx512_core_amx_fp16: return "avx512_core_amx_fp16";
      default: return "x86-64";
    }
  });
  // bf16 dot products in hardware (AVX512_BF16, AMX-BF16, AVX-NE-CONVERT): the ISA values are
  // cumulative bit masks, so every ISA above one of these two contains its bits.
  m.def("native_bf16", []() {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    const auto ne = static_cast<unsigned>(dnnl::cpu_isa::avx2_vnni_2);
    return (isa & bf16) == bf16 || (isa & ne) == ne;
  });
  // The widest ISA our hand-written kernels dispatch to (cpuid AND oneDNN's effective ISA,
  // core/host_isa.hpp): "avx2" under ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 host.
  m.def("host_isa", []() { return std::string(host_isa_name()); });
  // Which build of the compiler-vectorised loops runs (core/isa_clones.hpp): "avx512",
  // "avx2_fma", "avx2" (OPFORGE_CPU_AVX2_FMA=0) or "baseline".
  m.def("vector_loops_isa", []() { return std::string(isa_clones_build()); });
  m.def("is_reference_impl", [](const std::string& impl) { return is_reference_impl_name(impl); });
  m.def("onednn_version", []() {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  });
}
