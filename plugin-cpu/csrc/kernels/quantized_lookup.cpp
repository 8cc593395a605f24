// QuantizedLookup (opforge_cpu/ops/quantized_lookup.py): each byte of a u8/s8 tensor replaced by
// its entry in a 256-entry table (input 1, a constant the int8 pass computed from the element-wise
// chain it replaces: DequantizeLinear -> Sigmoid/HardSigmoid/... -> QuantizeLinear). Element-wise
// on bytes, so it works in whatever layout the input has: the output takes the input's layout
// (a quantized convolution's channels-last one) when its readers accept that, else plain.
#include <cstring>

#include "core/elementwise.hpp"
#include "kernels/int8_layout.hpp"

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

struct LookupBound : Bound {
  StagedInputs::Bound staged;
};

class QuantizedLookupKernel : public Kernel {
 public:
  explicit QuantizedLookupKernel(NodeDesc& n) {
    table_.set(static_cast<const uint8_t*>(n.inputs[1].const_data));
    const TensorInfo& x = n.in(0);
    // the same layout (padding included) on both sides: one flat pass over the bytes; a blocked
    // layout is described again for the output's type only when it is a dense one
    const bool same_type = n.outputs[0].dtype == x.dtype;
    const bool keep = x.blocked && !n.allow_blocked_output.empty() && n.allow_blocked_output[0] &&
                      (same_type || !dense_order(x.md).empty());
    if (keep) {
      n.outputs[0].md = same_type ? x.md
                                  : dnnl::memory::desc(x.md.get_dims(), dnnl_type(n.outputs[0].dtype), x.md.get_strides());
      n.outputs[0].blocked = true;
      bytes_ = static_cast<int64_t>(x.md.get_size());
    } else {
      std::vector<int> plain(x.shape.size());
      for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<int>(i);
      staged_.add(x, plain);
      n.outputs[0].blocked = false;
      bytes_ = 1;
      for (auto d : x.shape) bytes_ *= d;
    }
  }
  size_t scratch_bytes() const override { return staged_.scratch_bytes() + 64; }
  std::string impl_name() const override { return std::string(staged_.any() ? "reorder+table" : "table") + lookup_isa_suffix(); }
  // (the table maps bytes one to one: the output may be written over the input)
  int inplace_input(int out) const override { return out == 0 && !staged_.any() ? 0 : -1; }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView*, size_t, void* scratch) override {
    auto b = std::make_unique<LookupBound>();
    staged_.bind(b->staged, in, static_cast<char*>(scratch));
    return b;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* b = static_cast<LookupBound*>(bound);
    staged_.run(ctx, b->staged);
    const uint8_t* x = b->staged.data.empty() ? static_cast<const uint8_t*>(in[0].data)
                                              : static_cast<const uint8_t*>(b->staged.data[0]);
    uint8_t* y = static_cast<uint8_t*>(out[0].data);
    const ByteTable& t = table_;
    parallel_range(bytes_, ctx.num_threads, [&](int64_t s, int64_t e) { lookup_bytes(t, x + s, y + s, e - s); }, 262144);
  }

 private:
  ByteTable table_;
  StagedInputs staged_;
  int64_t bytes_ = 0;
};
}  // namespace

std::string check_quantized_lookup(const NodeDesc& n) {
  if (n.inputs.size() != 2) return "needs the data and the table";
  if (!is_int8(n.in(0).dtype)) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (!n.is_const(1) || n.in(1).shape != Shape{256} || !is_int8(n.in(1).dtype))
    return "the table must be a constant u8/i8 vector of 256 entries";
  if (!n.outputs.empty() && n.outputs[0].dtype != n.in(1).dtype) return "the output must have the table's type";
  return "";
}

std::unique_ptr<Kernel> make_quantized_lookup(NodeDesc& n) {
  std::string why = check_quantized_lookup(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedLookupKernel>(n);
}

OPFORGE_KERNEL(QuantizedLookup, make_quantized_lookup, check_quantized_lookup).layout_flexible();

}  // namespace opforge_cpu
