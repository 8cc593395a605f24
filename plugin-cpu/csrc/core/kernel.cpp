#include "core/kernel.hpp"

namespace opforge_cpu {

std::vector<int64_t> NodeDesc::const_ints(int i) const {
  if (!is_const(i)) fail("input " + std::to_string(i) + " must be a constant");
  const auto& t = inputs[i].info;
  return read_ints(t.dtype, inputs[i].const_data, numel(t.shape));
}

std::vector<double> NodeDesc::const_floats(int i) const {
  if (!is_const(i)) fail("input " + std::to_string(i) + " must be a constant");
  const auto& t = inputs[i].info;
  return read_floats(t.dtype, inputs[i].const_data, numel(t.shape));
}

void NodeDesc::fail(const std::string& why) const { throw CompileFailure(why); }

std::string check_any(const NodeDesc&) { return ""; }

std::string check_float(const NodeDesc& n) {
  return n.in(0).dtype == DType::f32 ? "" : std::string("element type ") + dtype_name(n.in(0).dtype) + " is not supported (f32 only)";
}

std::string check_numeric(const NodeDesc& n) {
  DType t = n.in(0).dtype;
  if (t == DType::boolean || t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

}  // namespace opforge_cpu
