#include "core/tensor.hpp"

#include <cmath>
#include <sstream>

namespace opforge_cpu {

namespace {
struct TypeRow { DType t; const char* name; size_t size; };
const TypeRow kTypes[] = {
    {DType::boolean, "boolean", 1}, {DType::f16, "f16", 2}, {DType::bf16, "bf16", 2},
    {DType::f32, "f32", 4}, {DType::f64, "f64", 8}, {DType::i8, "i8", 1}, {DType::i16, "i16", 2},
    {DType::i32, "i32", 4}, {DType::i64, "i64", 8}, {DType::u8, "u8", 1}, {DType::u16, "u16", 2},
    {DType::u32, "u32", 4}, {DType::u64, "u64", 8},
};
}  // namespace

DType dtype_from_name(const std::string& name) {
  for (const auto& r : kTypes)
    if (name == r.name) return r.t;
  throw CompileFailure("element type '" + name + "' is not supported by the CPU device");
}

const char* dtype_name(DType t) { return kTypes[static_cast<int>(t)].name; }
size_t dtype_size(DType t) { return kTypes[static_cast<int>(t)].size; }

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  if (s.size() == 1) o << ",";
  o << ")";
  return o.str();
}

template <class T> static void cvt(const void* p, int64_t n, std::vector<int64_t>& out) {
  const T* v = static_cast<const T*>(p);
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(v[i]));
}
template <class T> static void cvtf(const void* p, int64_t n, std::vector<double>& out) {
  const T* v = static_cast<const T*>(p);
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>(v[i]));
}

std::vector<int64_t> read_ints(DType dt, const void* data, int64_t n) {
  std::vector<int64_t> out;
  out.reserve(n);
  switch (dt) {
    case DType::i64: cvt<int64_t>(data, n, out); break;
    case DType::i32: cvt<int32_t>(data, n, out); break;
    case DType::i16: cvt<int16_t>(data, n, out); break;
    case DType::i8: cvt<int8_t>(data, n, out); break;
    case DType::u8: case DType::boolean: cvt<uint8_t>(data, n, out); break;
    case DType::u16: cvt<uint16_t>(data, n, out); break;
    case DType::u32: cvt<uint32_t>(data, n, out); break;
    case DType::u64: cvt<uint64_t>(data, n, out); break;
    case DType::f32: cvt<float>(data, n, out); break;
    case DType::f64: cvt<double>(data, n, out); break;
    default: throw CompileFailure(std::string("cannot read integers from a ") + dtype_name(dt) + " tensor");
  }
  return out;
}

std::vector<double> read_floats(DType dt, const void* data, int64_t n) {
  std::vector<double> out;
  out.reserve(n);
  switch (dt) {
    case DType::f32: cvtf<float>(data, n, out); break;
    case DType::f64: cvtf<double>(data, n, out); break;
    case DType::f16: for (int64_t i = 0; i < n; ++i) out.push_back(f16_to_f32(static_cast<const uint16_t*>(data)[i])); break;
    case DType::bf16: for (int64_t i = 0; i < n; ++i) out.push_back(bf16_to_f32(static_cast<const uint16_t*>(data)[i])); break;
    default: {
      auto v = read_ints(dt, data, n);
      for (auto x : v) out.push_back(static_cast<double>(x));
    }
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= (rank == 0 ? 1 : rank))
    throw CompileFailure(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank));
  return a;
}

float bf16_to_f32(uint16_t v) {
  uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7FC0;
  // round to nearest even, as ml_dtypes does
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

uint16_t f32_to_f16(float f) {
  _Float16 v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}

}  // namespace opforge_cpu
