// A node's fused activations ("post_ops": the nodes folded into it) as our kernels' PostOps:
// one translation for every hand-written kernel that runs them (stem_conv.cpp, dw_conv_plan.cpp,
// quantized_dw_conv.cpp), so a new activation is added in one place.
#pragma once

#include <vector>

#include "core/attrs.hpp"
#include "core/post_op.hpp"

namespace opforge_cpu {

// Appends `fused` (in order) to `post`, or returns false at the first op that is not ReLU, Clip,
// linear, Swish or HardSwish (then the caller keeps oneDNN's primitive). Each kernel then refuses
// the kinds it does not run itself (e.g. DwConvInt8::why_not: not Swish/HardSwish).
bool append_post_ops(const std::vector<FusedOp>& fused, std::vector<PostOp>& post);

}  // namespace opforge_cpu
