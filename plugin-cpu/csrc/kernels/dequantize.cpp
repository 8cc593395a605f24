// Dequantize (opforge_cpu/ops/dequantize.py): u8/s8 -> f32, (x - zero_point) * scale, exactly
// DequantizeLinear's arithmetic (the loop is in quantize.cpp); a blocked source (a quantized
// convolution's nhwc output) is first reordered to plain in scratch.
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

std::string check_dequantize(const NodeDesc& n) {
  if (n.in(0).dtype != DType::u8 && n.in(0).dtype != DType::i8)
    return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  return "";
}

std::unique_ptr<Kernel> make_dequantize(NodeDesc& n) {
  std::string why = check_dequantize(n);
  if (!why.empty()) throw CompileFailure(why);
  return make_scaled_convert(n.in(0), n.outputs[0], false, positive_scale(n),
                             static_cast<int32_t>(n.attrs.i("zero_point", 0)));
}

OPFORGE_KERNEL(Dequantize, make_dequantize, check_dequantize).layout_flexible();

}  // namespace opforge_cpu
