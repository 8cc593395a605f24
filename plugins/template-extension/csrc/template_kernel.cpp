// The compiled CPU kernel of the template extension's custom op Identity (opset
// template_extension): y = x * scale. Built against opforge-cpu's C ABI header (a copy in
// csrc/include, see CMakeLists.txt); the CPU executor calls compute() from its C++ loop, so no
// Python runs per inference. `calls()` counts computations, which the tests use to prove exactly that.
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "opforge_cpu/kernel_abi.h"

namespace py = pybind11;

namespace {

std::atomic<long long> g_calls{0};

struct Instance {
  double scale = 1.0;
};

int64_t numel(const opforge_tensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) n *= t.shape[i];
  return n;
}

size_t elem_size(int32_t dtype) {
  switch (dtype) {
    case OPFORGE_BOOLEAN: case OPFORGE_I8: case OPFORGE_U8: return 1;
    case OPFORGE_F16: case OPFORGE_BF16: case OPFORGE_I16: case OPFORGE_U16: return 2;
    case OPFORGE_F32: case OPFORGE_I32: case OPFORGE_U32: return 4;
    default: return 8;
  }
}

void* create(const opforge_node_info* node, char* err, size_t err_len) {
  auto* inst = new Instance();
  for (int64_t i = 0; i < node->num_attrs; ++i) {
    const opforge_attr& a = node->attrs[i];
    if (std::strcmp(a.name, "scale") == 0) {
      if (a.kind == OPFORGE_ATTR_FLOAT) inst->scale = a.floats[0];
      else if (a.kind == OPFORGE_ATTR_INT) inst->scale = static_cast<double>(a.ints[0]);
    }
  }
  int32_t t = node->inputs[0].dtype;
  if (inst->scale != 1.0 && t != OPFORGE_F32 && t != OPFORGE_F64) {
    std::snprintf(err, err_len, "node '%s': scale=%g needs an f32 or f64 input", node->name, inst->scale);
    delete inst;
    return nullptr;
  }
  return inst;
}

int compute(void* instance, const opforge_tensor* in, int64_t n_in, opforge_tensor* out, int64_t n_out, char* err,
            size_t err_len) {
  if (n_in != 1 || n_out != 1) {
    std::snprintf(err, err_len, "expected 1 input and 1 output, got %lld and %lld", static_cast<long long>(n_in),
                  static_cast<long long>(n_out));
    return 1;
  }
  const auto* inst = static_cast<const Instance*>(instance);
  const int64_t n = numel(in[0]);
  if (inst->scale == 1.0) {
    if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, static_cast<size_t>(n) * elem_size(in[0].dtype));
  } else if (in[0].dtype == OPFORGE_F32) {
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    const float s = static_cast<float>(inst->scale);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
  } else {
    const double* x = static_cast<const double*>(in[0].data);
    double* y = static_cast<double*>(out[0].data);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inst->scale;
  }
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void destroy(void* instance) { delete static_cast<Instance*>(instance); }

const opforge_cpu_kernel kIdentity = {
    OPFORGE_CPU_KERNEL_ABI_VERSION, sizeof(opforge_cpu_kernel), "opforge-template-extension Identity",
    create, compute, destroy,
};

}  // namespace

PYBIND11_MODULE(_template_kernel, m) {
  m.doc() = "C++ CPU kernel of the template extension's Identity op";
  m.def("kernel", []() {
    return py::capsule(static_cast<const void*>(&kIdentity), OPFORGE_CPU_KERNEL_CAPSULE_NAME);
  }, "The kernel descriptor to register for device CPU.");
  m.def("calls", []() { return g_calls.load(); }, "How many times compute() ran.");
  m.def("reset_calls", []() { g_calls.store(0); });
}
