// A network's first convolution (a few input channels, the image) as a direct AVX-512 kernel of
// our own (stem_conv.cpp, arithmetic in stem_conv_compute.cpp) where it beats oneDNN 3.2.
#pragma once

#include <memory>

#include "core/nn.hpp"

namespace opforge_cpu {

// The kernel for an f32 Convolution node `n` whose oneDNN primitive would write `dst_md`, when
// the rule admits it (see stem_conv.cpp); nullptr otherwise (then oneDNN's primitive runs).
// Its output is written in dst_md's layout, so the next step sees what oneDNN would have given.
std::unique_ptr<Kernel> make_stem_conv(const NodeDesc& n, const ConvGeometry& geo, const dnnl::memory::desc& dst_md);

}  // namespace opforge_cpu
