// NaN-keeping element-wise loops for the activations oneDNN's eltwise maps NaN to a number.
// Restoring NaN after oneDNN's primitive meant a second, scalar pass over input and output (6x
// the op on a 64 MB tensor); here each element is one select chain whose comparisons are false
// for NaN, so NaN falls through to the output, e.g. relu: x < 0 ? 0 : x.
// GCC vectorises the selects only without trapping math, hence the pragma (this file alone:
// nothing here depends on floating-point exceptions). target_clones: the module builds for
// baseline x86-64, the loops run with the host's vector ISA.
#pragma GCC optimize("no-trapping-math")

#include "core/nan_eltwise.hpp"

#include <algorithm>
#include <cstring>

#include "core/elementwise.hpp"
#include "core/fast_exp.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

bool eltwise_loses_nan(dnnl::algorithm alg) {
  using a = dnnl::algorithm;
  return alg == a::eltwise_relu || alg == a::eltwise_clip_v2 || alg == a::eltwise_exp || alg == a::eltwise_hardsigmoid;
}

namespace {
enum class Kind { relu0, leaky, clip, hardsigmoid, exp };

inline __attribute__((always_inline)) void nan_safe_loops(Kind k, float alpha, float beta, const float* x, float* y,
                                                         int64_t n) {
  switch (k) {
    case Kind::relu0:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
      break;
    case Kind::leaky:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.f ? alpha * x[i] : x[i];
      break;
    case Kind::clip:
      // max then min, like np.clip: with lo > hi every element becomes hi
      for (int64_t i = 0; i < n; ++i) {
        const float t = x[i] < alpha ? alpha : x[i];
        y[i] = t > beta ? beta : t;
      }
      break;
    case Kind::hardsigmoid:
      for (int64_t i = 0; i < n; ++i) {
        const float t = alpha * x[i] + beta;
        const float u = t < 0.f ? 0.f : t;
        y[i] = u > 1.f ? 1.f : u;
      }
      break;
    case Kind::exp:
      for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i]);
      break;
  }
}

OPFORGE_ISA_CLONES(, "avx512f", nan_safe_loop, nan_safe_loops,
                   (Kind k, float alpha, float beta, const float* x, float* y, int64_t n), (k, alpha, beta, x, y, n))

class NanSafeEltwise : public Kernel {
 public:
  NanSafeEltwise(const Eltwise& op, int64_t count) : alpha_(op.alpha), beta_(op.beta), count_(count) {
    using a = dnnl::algorithm;
    if (op.alg == a::eltwise_relu) kind_ = op.alpha == 0.f ? Kind::relu0 : Kind::leaky;
    else if (op.alg == a::eltwise_clip_v2) kind_ = Kind::clip;
    else if (op.alg == a::eltwise_hardsigmoid) kind_ = Kind::hardsigmoid;
    else if (op.alg == a::eltwise_exp) kind_ = Kind::exp;
    else throw CompileFailure("no NaN-keeping loop for this eltwise algorithm");
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float* x = in[0].ptr<float>();
    float* y = out[0].ptr<float>();
    // exp does ~15 flops an element: worth threads at a smaller size than a select
    const int64_t grain = kind_ == Kind::exp ? 8192 : 32768;
    parallel_range(count_, ctx.num_threads, [&](int64_t b, int64_t e) {
      nan_safe_loop(kind_, alpha_, beta_, x + b, y + b, e - b);
    }, grain);
  }
  // Same index in and out: the output may overwrite the input.
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  std::string impl_name() const override { return "loop:nan_safe"; }

 private:
  Kind kind_ = Kind::relu0;
  float alpha_, beta_;
  int64_t count_;
};
}  // namespace

std::unique_ptr<Kernel> make_nan_safe_eltwise(const Eltwise& op, int64_t count) {
  return std::make_unique<NanSafeEltwise>(op, count);
}

}  // namespace opforge_cpu
