// Ops whose output shape depends on the data (NonZero, Unique, NonMaxSuppression). The program
// gives them outputs of an upper-bound shape (the dynamic dimension at its largest) plus one
// extra i64 [1] output where the kernel reports the actual size of that dimension; the device
// then runs the rest of the model on the trimmed outputs (see opforge_cpu/staging.py).
#pragma once

#include "kernels/index_common.hpp"

namespace opforge_cpu {

inline void store_int(DType t, void* p, int64_t i, int64_t v) {
  switch (t) {
    case DType::i32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::i64: static_cast<int64_t*>(p)[i] = v; break;
    default: throw KernelFailure(std::string("index output type ") + dtype_name(t) + " is not supported");
  }
}

// `declared`: the op's own outputs; the size output follows them when the program added it
// (not when shape inference already knew every shape, e.g. Unique of one element).
inline void report_size(TensorView* out, size_t n_out, size_t declared, int64_t size) {
  if (n_out > declared) out[declared].ptr<int64_t>()[0] = size;
}

inline std::string check_int_output(DType t) {
  return (t == DType::i32 || t == DType::i64) ? "" : std::string("index output type ") + dtype_name(t) + " is not supported";
}

}  // namespace opforge_cpu
