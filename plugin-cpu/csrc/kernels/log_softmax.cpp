// LogSoftmax-5: x - max - log(sum(exp(x - max))) along an axis, by oneDNN (f32).
#include "core/softmax_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_log_softmax(NodeDesc& n) { return std::make_unique<SoftmaxKernel>(n, true); }

std::string check_log_softmax(const NodeDesc& n) { return n.in(0).dtype == DType::f32 ? "" : "LogSoftmax runs in f32 only"; }

OPFORGE_KERNEL(LogSoftmax, make_log_softmax, check_log_softmax);

}  // namespace opforge_cpu
