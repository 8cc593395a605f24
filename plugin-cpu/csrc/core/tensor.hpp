// Element types, shapes and tensor views shared by the executor and every kernel.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace opforge_cpu {

// The same names as opforge.element_type.Type, so Python passes Type.ir strings through.
enum class DType : int32_t {
  boolean = 0, f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
};

DType dtype_from_name(const std::string& name);
const char* dtype_name(DType t);
size_t dtype_size(DType t);
inline bool is_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s);

// Row-major strides in elements.
inline Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// A tensor as a kernel sees it at run time: a pointer into the request's arena (or a constant).
struct TensorView {
  DType dtype = DType::f32;
  Shape shape;
  void* data = nullptr;

  template <class T> T* ptr() const { return static_cast<T*>(data); }
  int64_t size() const { return numel(shape); }
  size_t bytes() const { return static_cast<size_t>(size()) * dtype_size(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
};

// Raised by kernels for problems found while running; the executor adds the node's name.
struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raised while building a program (bad attributes, unsupported type combinations).
struct CompileFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads a constant integer tensor (i32/i64/u8...) as int64 values (axes, shapes, pads).
std::vector<int64_t> read_ints(DType dt, const void* data, int64_t n);
std::vector<double> read_floats(DType dt, const void* data, int64_t n);

// Normalises a possibly negative axis against a rank, with a message that names it.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");

// bfloat16 / float16 conversions (no hardware type needed).
float bf16_to_f32(uint16_t v);
uint16_t f32_to_bf16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace opforge_cpu
