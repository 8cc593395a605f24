// Softmax-8: exp(x - max) / sum along an axis, by oneDNN (f32).
#include "core/softmax_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_softmax(NodeDesc& n) { return std::make_unique<SoftmaxKernel>(n, false); }

std::string check_softmax(const NodeDesc& n) { return n.in(0).dtype == DType::f32 ? "" : "Softmax runs in f32 only"; }

OPFORGE_KERNEL(Softmax, make_softmax, check_softmax);

}  // namespace opforge_cpu
