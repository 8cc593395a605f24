#include "core/power_scalar.hpp"

#include <cmath>
#include <cstring>

#include "core/elementwise.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

PowerForm power_form(double e) {
  if (e == 2.0) return PowerForm::square;
  if (e == 3.0) return PowerForm::cube;
  if (e == 0.5) return PowerForm::sqrt;
  if (e == 1.0) return PowerForm::copy;
  if (e == -1.0) return PowerForm::reciprocal;
  return PowerForm::none;
}

// Each loop is one form so the compiler vectorises it; the clones pick the host's widest ISA at
// run time (the module is built for baseline x86-64; core/isa_clones.hpp).
static inline __attribute__((always_inline)) void power_loops(PowerForm form, const float* x, float* y, int64_t n) {
  switch (form) {
    case PowerForm::square: for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i]; break;
    // In double: x*x is exact there, so the result is rounded (almost always) once, as powf's is.
    case PowerForm::cube:
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        y[i] = static_cast<float>(v * v * v);
      }
      break;
    case PowerForm::sqrt: for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]); break;
    case PowerForm::copy: if (y != x) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float)); break;
    case PowerForm::reciprocal: for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / x[i]; break;
    case PowerForm::none: break;
  }
}

static inline __attribute__((always_inline)) void power_loops(PowerForm form, const double* x, double* y, int64_t n) {
  switch (form) {
    case PowerForm::square: for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i]; break;
    case PowerForm::cube: for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i]; break;
    case PowerForm::sqrt: for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]); break;
    case PowerForm::copy: if (y != x) std::memmove(y, x, static_cast<size_t>(n) * sizeof(double)); break;
    case PowerForm::reciprocal: for (int64_t i = 0; i < n; ++i) y[i] = 1.0 / x[i]; break;
    case PowerForm::none: break;
  }
}

OPFORGE_ISA_CLONES(, "avx512f", power_scalar, power_loops, (PowerForm form, const float* x, float* y, int64_t n),
                   (form, x, y, n))
OPFORGE_ISA_CLONES(, "avx512f", power_scalar, power_loops, (PowerForm form, const double* x, double* y, int64_t n),
                   (form, x, y, n))

namespace {
template <class T> class PowerScalarKernel : public ElementwiseKernel {
 public:
  PowerScalarKernel(const NodeDesc& n, PowerForm form) : ElementwiseKernel(n), form_(form) {}
  std::string impl_name() const override {
    static const char* names[] = {"pow", "pow_square", "pow_cube", "pow_sqrt", "pow_copy", "pow_reciprocal"};
    return names[static_cast<int>(form_)];
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const PowerForm form = form_;
    parallel_range(out[0].size(), ctx.num_threads, [&](int64_t b, int64_t e) { power_scalar(form, x + b, y + b, e - b); });
  }

 private:
  PowerForm form_;
};
}  // namespace

std::unique_ptr<Kernel> make_power_scalar(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if ((t != DType::f32 && t != DType::f64) || n.in(1).dtype != t || !n.is_const(1) || numel(n.in(1).shape) != 1 ||
      numel(n.outputs.at(0).shape) != numel(n.in(0).shape) || n.in(0).blocked)
    return nullptr;
  const PowerForm form = power_form(n.const_floats(1).at(0));
  if (form == PowerForm::none) return nullptr;
  if (t == DType::f32) return std::make_unique<PowerScalarKernel<float>>(n, form);
  return std::make_unique<PowerScalarKernel<double>>(n, form);
}

}  // namespace opforge_cpu
