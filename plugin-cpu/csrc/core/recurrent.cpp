// The node description shared by the two recurrent implementations, and the choice between them.
#include "core/recurrent.hpp"

#include <algorithm>

#include "core/env_switch.hpp"

namespace opforge_cpu {

namespace {
Act act_of(const std::string& name) {
  if (name == "sigmoid") return Act::sigmoid;
  if (name == "tanh") return Act::tanh;
  if (name == "relu") return Act::relu;
  throw CompileFailure("activation '" + name + "' is not supported (sigmoid, tanh, relu)");
}

std::string dims_text(const Shape& s) { return shape_str(s); }

// OPFORGE_CPU_RNN_INT8=0: a DynamicQuantizeLSTM's recurrence in f32 on its dequantized weights
// (the frontend's translation, as before stop 26) instead of on the integers (rnn_gemv.hpp).
bool recurrence_int8_on() {
  static const bool on = env_switch_on("OPFORGE_CPU_RNN_INT8");
  return on;
}

void expect_shape(const NodeDesc& n, int i, const char* what, const Shape& want) {
  if (n.in(i).shape != want)
    throw CompileFailure(std::string("input ") + std::to_string(i) + " (" + what + ") has shape " +
                         dims_text(n.in(i).shape) + ", expected " + dims_text(want));
}
}  // namespace

RnnSpec::RnnSpec(const NodeDesc& n, Cell c) : cell(c) {
  states = c == Cell::lstm ? 2 : 1;
  gates = c == Cell::rnn ? 1 : c == Cell::gru ? 3 : 4;
  if (static_cast<int>(n.inputs.size()) != 5 + states)
    throw CompileFailure("expected " + std::to_string(5 + states) + " inputs, got " + std::to_string(n.inputs.size()));
  const Shape& xs = n.in(0).shape;
  if (xs.size() != 3) throw CompileFailure("input 0 (X) has shape " + dims_text(xs) + ", expected rank 3");
  dtype = n.in(0).dtype;
  batch = xs[0];
  seq = xs[1];
  input = xs[2];
  hidden = n.attrs.i("hidden_size");
  if (hidden <= 0) throw CompileFailure("hidden_size is " + std::to_string(hidden) + ", expected a positive value");
  const std::string dir = n.attrs.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    throw CompileFailure("direction '" + dir + "' is not forward, reverse or bidirectional");
  dirs = dir == "bidirectional" ? 2 : 1;
  reverse_only = dir == "reverse";
  lbr = c == Cell::gru && n.attrs.b("linear_before_reset", false);
  bias_gates = lbr ? 4 : gates;
  const size_t n_acts = c == Cell::rnn ? 1 : c == Cell::gru ? 2 : 3;
  const auto names = n.attrs.strings("activations");
  if (names.size() < n_acts)
    throw CompileFailure("activations has " + std::to_string(names.size()) + " entries, expected " + std::to_string(n_acts));
  for (size_t i = 0; i < n_acts; ++i) acts.push_back(act_of(names[i]));
  clip = n.attrs.f("clip", 0.0);
  bf16_weights = n.attrs.b("bf16_weights", false);
  if (clip < 0) throw CompileFailure("clip is negative, expected 0 (no clipping) or a positive bound");
  len_type = n.in(in_len()).dtype;
  if (is_float(len_type) || len_type == DType::boolean)
    throw CompileFailure(std::string("sequence_lengths has element type ") + dtype_name(len_type) + ", expected an integer type");
  for (int i = 1; i <= states; ++i) expect_shape(n, i, "initial state", {batch, dirs, hidden});
  expect_shape(n, in_len(), "sequence_lengths", {batch});
  expect_shape(n, in_w(), "W", {dirs, gh(), input});
  expect_shape(n, in_r(), "R", {dirs, gh(), hidden});
  expect_shape(n, in_b(), "B", {dirs, bias_gates * hidden});
  auto row_scales = [&](const char* key, const char* of, std::vector<float>& dst) {
    if (!n.attrs.has(key) || n.attrs.is_none(key) || !recurrence_int8_on()) return;
    const auto scales = n.attrs.floats(key);
    if (static_cast<int64_t>(scales.size()) != dirs * gh())
      throw CompileFailure(std::string(key) + " has " + std::to_string(scales.size()) + " values, expected " +
                           std::to_string(dirs * gh()) + " (one per row of " + of + ")");
    dst.assign(scales.begin(), scales.end());
  };
  row_scales("int8_recurrence_scales", "R", r_int8_scales);
  row_scales("int8_input_scales", "W", w_int8_scales);
  for (int i : {0, 1, states, in_w(), in_r(), in_b()})
    if (n.in(i).dtype != dtype)
      throw CompileFailure("input " + std::to_string(i) + " has element type " + dtype_name(n.in(i).dtype) +
                           ", expected " + dtype_name(dtype) + " (the type of X)");
}

bool RnnSpec::default_acts() const {
  switch (cell) {
    case Cell::rnn: return true;  // oneDNN's vanilla RNN takes relu, tanh or logistic
    case Cell::gru: return acts[0] == Act::sigmoid && acts[1] == Act::tanh;
    case Cell::lstm: return acts[0] == Act::sigmoid && acts[1] == Act::tanh && acts[2] == Act::tanh;
  }
  return false;
}

void read_lengths(const RnnSpec& s, const void* data, int64_t* out) {
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t v = 0;
    switch (s.len_type) {
      case DType::i32: v = static_cast<const int32_t*>(data)[b]; break;
      case DType::i64: v = static_cast<const int64_t*>(data)[b]; break;
      case DType::i8: v = static_cast<const int8_t*>(data)[b]; break;
      case DType::i16: v = static_cast<const int16_t*>(data)[b]; break;
      case DType::u8: v = static_cast<const uint8_t*>(data)[b]; break;
      case DType::u16: v = static_cast<const uint16_t*>(data)[b]; break;
      case DType::u32: v = static_cast<const uint32_t*>(data)[b]; break;
      // beyond int64's range is still "longer than the sequence"
      case DType::u64: {
        const uint64_t u = static_cast<const uint64_t*>(data)[b];
        v = u > static_cast<uint64_t>(s.seq) ? s.seq : static_cast<int64_t>(u);
        break;
      }
      default: throw KernelFailure("sequence_lengths must be integers");
    }
    out[b] = std::min(std::max<int64_t>(v, 0), s.seq);
  }
}

int recurrence_threads(const RnnSpec& s, int max_threads) {
  // multiply-adds of one step's recurrent product, per direction
  const double flops = 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.gh()) * static_cast<double>(s.hidden);
  constexpr double kPerThread = 16e6;
  return static_cast<int>(std::max(1.0, std::min<double>(max_threads, flops / kPerThread)));
}

bool gemv_recurrence(const RnnSpec& s, bool r_const) {
  // Measured in CPU time, 1 thread, seq 128, hidden 256 (bench_rnn.py's models), PanelGemv vs
  // the alternative: bidirectional LSTM batch 1 3.3 vs 5.8-6.4 ms (oneDNN's primitive), batch 2
  // 6.0 vs 6.5-7.1, batch 4 9.5-9.8 vs 8.5-9.1; two GRUs (lbr, one direction) batch 1 2.5-2.6
  // vs 2.9-3.0 (the GEMM path's oneDNN matmuls), batch 2 4.4 vs 3.7. Beyond one row (two per
  // direction-pair) the products become compute-bound and oneDNN's blocking wins.
  const int64_t rows = s.dirs == 2 ? 2 : 1;
  return s.dtype == DType::f32 && r_const && s.batch <= rows;
}

std::unique_ptr<Kernel> make_recurrent(NodeDesc& n, Cell c) {
  const RnnSpec s(n, c);
  bool lengths_const = n.is_const(s.in_len());
  bool all_full = false;
  if (lengths_const) {
    std::vector<int64_t> len(static_cast<size_t>(s.batch));
    read_lengths(s, n.inputs[s.in_len()].const_data, len.data());
    all_full = std::all_of(len.begin(), len.end(), [&](int64_t v) { return v == s.seq; });
  }
  // One direction and a small batch: the GEMM path's per-step matmul beats oneDNN 3.2's f32 RNN
  // (its `ref` implementation). Measured in CPU time, 1 thread, AMX host, seq 128, hidden 256
  // (GEMM path vs primitive): GRU (lbr) batch 1 1.58 vs 2.10 ms, batch 4 2.84 vs 2.91; LSTM batch
  // 1 2.08 vs 3.16, batch 4 4.13 vs 5.29. Two directions or batch 8 favour the primitive
  // (bidirectional LSTM batch 1 8.0 vs 6.8, batch 8 22.4 vs 14.9; GRU batch 8 7.15 vs 6.97).
  // Batch 1 with constant R (2 when bidirectional) takes the GEMM path's PanelGemv (see
  // gemv_recurrence).
  const bool gemm_faster = gemv_recurrence(s, n.is_const(s.in_r())) || (s.dirs == 1 && s.batch <= 4);
  const bool onednn_can = !gemm_faster && s.dtype == DType::f32 && s.default_acts() && s.clip == 0 && n.is_const(s.in_w()) &&
                          n.is_const(s.in_r()) && n.is_const(s.in_b()) && s.batch > 0 && s.seq > 0 &&
                          s.input > 0;
  if (onednn_can && (!lengths_const || all_full)) {
    auto k = make_rnn_onednn(n, s, lengths_const ? nullptr : make_rnn_gemm(n, s));
    if (k) return k;
  }
  return make_rnn_gemm(n, s);
}

std::string check_recurrent(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t != DType::f32 && t != DType::f64) return std::string("element type ") + dtype_name(t) + " is not supported (f32, f64)";
  return "";
}

}  // namespace opforge_cpu
