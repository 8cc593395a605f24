#include "core/fused_post_ops.hpp"

#include "core/kernel.hpp"

namespace opforge_cpu {

bool append_post_ops(const std::vector<FusedOp>& fused, std::vector<PostOp>& post) {
  for (const FusedOp& f : fused) {
    // the fused op's own registration says which oneDNN eltwise it is (KernelSpec::post_op)
    const KernelEntry* e = find_kernel(f.type);
    if (!e || !e->post_op || !f.attrs) return false;
    const Eltwise el = e->post_op(*f.attrs);
    switch (el.alg) {
      case dnnl::algorithm::eltwise_relu: post.push_back({PostOp::relu, el.alpha, 0.f}); break;
      case dnnl::algorithm::eltwise_clip:
      case dnnl::algorithm::eltwise_clip_v2: post.push_back({PostOp::clip, el.alpha, el.beta}); break;
      case dnnl::algorithm::eltwise_linear: post.push_back({PostOp::linear, el.alpha, el.beta}); break;
      case dnnl::algorithm::eltwise_swish: post.push_back({PostOp::swish, el.alpha, 0.f}); break;
      case dnnl::algorithm::eltwise_hardswish: post.push_back({PostOp::hardswish, el.alpha, el.beta}); break;
      default: return false;
    }
  }
  return true;
}

}  // namespace opforge_cpu
