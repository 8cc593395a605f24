// AvgPool: one oneDNN primitive (weights pre-packed at compile time, fused post-ops), see core/nn.cpp.
#include "core/nn.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_avg_pool(NodeDesc& n) { return make_dnnl_pool(n, false); }

OPFORGE_KERNEL(AvgPool, make_avg_pool, check_float).layout_flexible();

}  // namespace opforge_cpu
