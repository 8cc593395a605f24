// Power whose exponent is a scalar constant with an exact cheaper form: 2 (x*x), 3 (x*x*x),
// 0.5 (sqrt), 1 (copy) and -1 (reciprocal). Tanh-GELU (x ** 3) and RMSNorm (x ** 2, ** 0.5)
// write these; std::pow costs ~20-50 ns an element where these are one vector instruction.
// Every form gives the reference's (NumPy's) results bit for bit, x ** 3 within one ulp: NaN
// stays NaN, +-0 ** -1 = +-inf, odd powers keep the sign of a negative base, and ** 0.5 is sqrt
// as NumPy's power takes it (sqrt(-0) = -0, sqrt(-inf) = NaN, where C's pow gives +0 and +inf).
#pragma once

#include <memory>

#include "core/kernel.hpp"

namespace opforge_cpu {

enum class PowerForm { none, square, cube, sqrt, copy, reciprocal };

// The form of x ** e, or PowerForm::none when e has none (then pow itself runs).
PowerForm power_form(double e);

// y[i] = x[i] ** e over [0, n) for the exponent `form` stands for; y may be x.
void power_scalar(PowerForm form, const float* x, float* y, int64_t n);
void power_scalar(PowerForm form, const double* x, double* y, int64_t n);

// A threaded kernel for Power(x, e) when x is f32/f64, e a scalar constant with a PowerForm and
// the output has x's elements (e does not broadcast x to more); nullptr otherwise.
std::unique_ptr<Kernel> make_power_scalar(const NodeDesc& n);

}  // namespace opforge_cpu
