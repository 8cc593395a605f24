// QuantizedConcat (opforge_cpu/ops/quantized_concat.py): u8/s8 inputs, each with its own scale
// and zero point, joined and written on the output's. An input on the output's grid is copied;
// any other goes through a 256-entry table computed here with the QDQ graph's f32 arithmetic,
// so the result is exactly DequantizeLinear -> Concat -> QuantizeLinear.
//
// Layout: concatenating channels, the output is channels-last when its readers take a blocked
// layout (what the quantized convolutions before and after it read and write: no reorder on
// either side); otherwise plain. Inputs in another layout are reordered into scratch first.
#include <cmath>
#include <cstring>

#include "core/elementwise.hpp"
#include "kernels/int8_layout.hpp"

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }


class QuantizedConcatKernel : public StagedKernel {
 public:
  explicit QuantizedConcatKernel(NodeDesc& n) {
    const Shape& ys = n.outputs[0].shape;
    const size_t rank = ys.size();
    const int64_t axis = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(rank));
    const auto scales = n.attrs.floats("scales");
    const auto zps = n.attrs.ints("zero_points");
    const DType out = n.outputs[0].dtype;
    const float s_out = static_cast<float>(n.attrs.f("dst_scale"));
    const int32_t z_out = static_cast<int32_t>(n.attrs.i("dst_zero_point", 0));
    const bool blocked_ok = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
    const std::vector<int> order = axis == 1 && rank >= 3 && blocked_ok ? channels_last_order(rank) : plain_order(rank);
    // the copy: for each of `outer_` rows, each input's contiguous run of its axis and the axes
    // inside it in `order`
    int pos = 0;
    while (order[pos] != axis) ++pos;
    outer_ = 1;
    for (int i = 0; i < pos; ++i) outer_ *= ys[order[i]];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const TensorInfo& x = n.in(static_cast<int>(i));
      staged_.add(x, order);
      int64_t run = 1;
      for (size_t j = pos; j < rank; ++j) run *= x.shape[order[j]];
      chunk_.push_back(run);
      const float s = static_cast<float>(scales[i]);
      const int32_t z = static_cast<int32_t>(zps[i]);
      Table t;
      t.copy = x.dtype == out && s == s_out && z == z_out;
      if (!t.copy) {
        uint8_t values[256];
        fill_table(values, x.dtype, s, z, out, s_out, z_out);
        t.table.set(values);
      }
      tables_.push_back(t);
      all_copy_ = all_copy_ && t.copy;
    }
    row_ = 0;
    for (auto c : chunk_) row_ += c;
    n.outputs[0].md = ordered_md(out, ys, order);
    n.outputs[0].blocked = !same_dense_layout(ys, order, plain_order(rank));
  }
  std::string impl_name() const override {
    return staged_name(all_copy_ ? "memcpy" : std::string("table") + lookup_isa_suffix());
  }

 private:
  void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const override {
    uint8_t* y = static_cast<uint8_t*>(out[0].data);
    parallel_range(outer_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t o = r0; o < r1; ++o) {
        uint8_t* dst = y + o * row_;
        for (size_t i = 0; i < chunk_.size(); ++i) {
          const int64_t c = chunk_[i];
          const uint8_t* src = static_cast<const uint8_t*>(data[i]) + o * c;
          if (tables_[i].copy) {
            std::memcpy(dst, src, static_cast<size_t>(c));
          } else {
            lookup_bytes(tables_[i].table, src, dst, c);
          }
          dst += c;
        }
      }
    }, std::max<int64_t>(1, 65536 / std::max<int64_t>(row_, 1)));
  }

  struct Table {
    bool copy = true;
    ByteTable table;  // indexed by the input's byte, holding the output's byte
  };
  static std::vector<int> plain_order(size_t rank) {
    std::vector<int> o(rank);
    for (size_t i = 0; i < rank; ++i) o[i] = static_cast<int>(i);
    return o;
  }
  // DequantizeLinear then QuantizeLinear of every byte value, in f32 as the QDQ graph computes it
  static void fill_table(uint8_t* t, DType in, float s, int32_t z, DType out, float s_out, int32_t z_out) {
    const float lo = out == DType::u8 ? 0.f : -128.f, hi = out == DType::u8 ? 255.f : 127.f;
    for (int b = 0; b < 256; ++b) {
      const int32_t q = in == DType::u8 ? b : static_cast<int8_t>(static_cast<uint8_t>(b));
      const float real = static_cast<float>(q - z) * s;
      float r = std::nearbyint(real / s_out) + static_cast<float>(z_out);  // half to even (default mode)
      r = std::fmin(std::fmax(r, lo), hi);
      const int32_t v = static_cast<int32_t>(r);
      t[b] = static_cast<uint8_t>(out == DType::u8 ? v : static_cast<int32_t>(static_cast<uint8_t>(static_cast<int8_t>(v))));
    }
  }

  std::vector<int64_t> chunk_;
  std::vector<Table> tables_;
  int64_t outer_ = 1, row_ = 0;
  bool all_copy_ = true;
};
}  // namespace

std::string check_quantized_concat(const NodeDesc& n) {
  if (n.inputs.empty()) return "needs at least one input";
  if (n.outputs.empty() || !is_int8(n.outputs[0].dtype)) return "output must be u8 or i8";
  const size_t rank = n.outputs[0].shape.size();
  if (rank == 0) return "cannot concatenate scalars";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const TensorInfo& x = n.in(static_cast<int>(i));
    if (!is_int8(x.dtype)) return "input " + std::to_string(i) + " is " + dtype_name(x.dtype) + ", expected u8 or i8";
    if (x.shape.size() != rank) return "input " + std::to_string(i) + " has another rank than the output";
  }
  if (!n.attrs.has("scales") || n.attrs.floats("scales").size() != n.inputs.size() ||
      n.attrs.ints("zero_points").size() != n.inputs.size())
    return "needs one scale and one zero point per input";
  for (double s : n.attrs.floats("scales"))
    if (!(s > 0) || !std::isfinite(s)) return "scales must be positive and finite";
  const double so = n.attrs.f("dst_scale");
  if (!(so > 0) || !std::isfinite(so)) return "dst_scale must be positive and finite";
  return "";
}

std::unique_ptr<Kernel> make_quantized_concat(NodeDesc& n) {
  std::string why = check_quantized_concat(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedConcatKernel>(n);
}

OPFORGE_KERNEL(QuantizedConcat, make_quantized_concat, check_quantized_concat).layout_flexible();

}  // namespace opforge_cpu
