// Shared pieces of the indexing kernels (gathers, scatters, one-hot): reading i32/i64 index
// tensors, range checks with the failing value in the message, and the scatter reductions.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/common.hpp"

namespace opforge_cpu {

inline int64_t load_index(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i64: return static_cast<const int64_t*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::i16: return static_cast<const int16_t*>(p)[i];
    case DType::u16: return static_cast<const uint16_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    case DType::u64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    default: throw KernelFailure("indices must be integers");
  }
}

// A possibly negative index into a dimension of size `dim`; throws naming the value.
inline int64_t checked_index(int64_t v, int64_t dim, const char* what = "index") {
  int64_t k = v < 0 ? v + dim : v;
  if (k < 0 || k >= dim)
    throw KernelFailure(std::string(what) + " " + std::to_string(v) + " is out of range for a dimension of size " +
                        std::to_string(dim));
  return k;
}

inline std::string check_index_input(const NodeDesc& n, int i) {
  DType t = n.in(i).dtype;
  if (t != DType::i32 && t != DType::i64) return std::string("indices must be i32 or i64, got ") + dtype_name(t);
  return "";
}

enum class Reduction { none, sum, sub, prod, min, max, mean };

inline Reduction parse_reduction(const std::string& s) {
  if (s == "none") return Reduction::none;
  if (s == "sum" || s == "add") return Reduction::sum;
  if (s == "sub") return Reduction::sub;
  if (s == "prod" || s == "mul") return Reduction::prod;
  if (s == "min") return Reduction::min;
  if (s == "max") return Reduction::max;
  if (s == "mean") return Reduction::mean;
  throw CompileFailure("unknown reduction '" + s + "'");
}

// Combine `u` into `d` (booleans: sum = OR, sub = XOR, prod = min = AND, max = OR).
template <class T> inline void reduce_into(T& d, T u, Reduction r, bool is_bool) {
  if (is_bool) {
    bool a = d != 0, b = u != 0;
    switch (r) {
      case Reduction::none: d = u; break;
      case Reduction::sum: case Reduction::max: case Reduction::mean: d = (a || b); break;
      case Reduction::sub: d = (a != b); break;
      case Reduction::prod: case Reduction::min: d = (a && b); break;
    }
    return;
  }
  switch (r) {
    case Reduction::none: d = u; break;
    case Reduction::sum: case Reduction::mean: d = static_cast<T>(d + u); break;
    case Reduction::sub: d = static_cast<T>(d - u); break;
    case Reduction::prod: d = static_cast<T>(d * u); break;
    case Reduction::min: d = std::min(d, u); break;
    case Reduction::max: d = std::max(d, u); break;
  }
}

// Every numeric type plus boolean (as uint8).
template <class F> void dispatch_numeric_bool(DType t, F&& f) {
  if (t == DType::boolean) {
    f(static_cast<uint8_t*>(nullptr));
    return;
  }
  dispatch_numeric(t, std::forward<F>(f));
}

inline std::string check_numeric_bool(const NodeDesc& n) {
  DType t = n.in(0).dtype;
  if (t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

}  // namespace opforge_cpu
