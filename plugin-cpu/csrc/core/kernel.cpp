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

}  // namespace opforge_cpu
