// BitCast: the input's bytes read as the output type (same bit width, so a byte copy, or nothing
// when the planner lets the output share the input). A boolean output holds 0/1 bytes: any
// non-zero input byte becomes true.
#include <cstring>

#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class BitCastKernel : public Kernel {
 public:
  explicit BitCastKernel(const NodeDesc& n) : to_bool_(n.outputs.at(0).dtype == DType::boolean) {}
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext&, const TensorView* in, TensorView* out, Bound*) override {
    if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
    if (to_bool_) {
      auto* p = out[0].ptr<uint8_t>();
      for (int64_t i = 0, n = out[0].size(); i < n; ++i) p[i] = p[i] != 0;
    }
  }
  std::string impl_name() const override { return "bit_cast"; }

 private:
  bool to_bool_;
};
}  // namespace

std::unique_ptr<Kernel> make_bit_cast(NodeDesc& n) { return std::make_unique<BitCastKernel>(n); }
std::string check_bit_cast(const NodeDesc& n) {
  if (dtype_size(n.in(0).dtype) != dtype_size(n.outputs.at(0).dtype))
    return std::string("BitCast from ") + dtype_name(n.in(0).dtype) + " to " + dtype_name(n.outputs.at(0).dtype) +
           ": the sizes differ";
  return "";
}

OPFORGE_KERNEL(BitCast, make_bit_cast, check_bit_cast);

}  // namespace opforge_cpu
