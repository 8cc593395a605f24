// The activations our hand-written convolution kernels run after their bias (the stem kernel,
// the depthwise and grouped-4 kernels, the int8 depthwise one). Kept free of the kernel
// interface so the C++ micro-benchmarks can build the kernels without it; fused_post_ops.hpp
// translates a node's fused ops into these.
#pragma once

namespace opforge_cpu {

// One fused activation, with oneDNN's eltwise parameters: ReLU's negative slope (alpha), clip's
// bounds (alpha, beta), linear's alpha * x + beta, Swish's x * sigmoid(alpha * x), HardSwish's
// x * clip(alpha * x + beta, 0, 1).
struct PostOp {
  enum Kind { relu, clip, linear, swish, hardswish } kind = relu;
  float alpha = 0.f, beta = 0.f;
};

}  // namespace opforge_cpu
