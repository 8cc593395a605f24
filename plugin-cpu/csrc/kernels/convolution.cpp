// Convolution: f32 as one oneDNN primitive (weights pre-packed at compile time, fused post-ops),
// see core/nn.cpp, except a network's first convolution on few channels where our direct
// kernel is faster (core/stem_conv.cpp); i32 as an exact direct loop (integer_conv_common.hpp).
#include "core/stem_conv.hpp"
#include "kernels/integer_conv_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_convolution(NodeDesc& n) {
  auto k = make_conv_any(n, false);
  // The oneDNN kernel is built first: it settles the output's layout (n.outputs[0].md), which
  // the stem kernel then writes, so the next step sees the same tensor either way.
  if (!int_conv_types(n) && !n.attrs.b("bf16", false)) {
    if (auto stem = make_stem_conv(n, conv_geometry(n), n.outputs[0].md)) return stem;
  }
  return k;
}
std::string check_convolution(const NodeDesc& n) { return check_conv_any(n); }

OPFORGE_KERNEL(Convolution, make_convolution, check_convolution).layout_flexible();

}  // namespace opforge_cpu
