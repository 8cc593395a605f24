// RNNSequence-5, GRUSequence-5 and LSTMSequence-5 on CPU. Two implementations share one
// description of the node (RnnSpec):
//  - rnn_onednn.cpp: oneDNN's own RNN primitives (vanilla_rnn, lstm, gru, lbr_gru) with the
//    weights permuted to oneDNN's gate order and packed once at compile time. They cover the
//    common configuration: f32, default activations, no clip, constant weights, every sequence
//    as long as the input; two directions with a batch above 2, or one direction with a batch
//    above 4 (below that the GEMM path measured faster).
//  - rnn_gemm.cpp: everything else (clip, other activations, per-batch sequence lengths, weights
//    computed at run time, f64, small batches): the input projection of all time steps as one
//    matrix product, one product per step and direction for the recurrence (PanelGemv, one
//    direction at a time, for f32 with constant R and batch 1, or 2 when bidirectional:
//    rnn_gemv.hpp; oneDNN matmuls otherwise), gates element-wise.
// Layouts are OpenVINO's (see core/src/opforge/opset/_rnn.py): X [batch, seq, input], states
// [batch, dirs, hidden], W [dirs, gates*hidden, input], R [dirs, gates*hidden, hidden],
// B [dirs, bias_gates*hidden], Y [batch, dirs, seq, hidden]. Gate blocks: LSTM f, i, c, o;
// GRU z, r, h; sequence_lengths[b] limits batch element b: later Y positions are zero, its final
// states are those after its last valid step (zero for an empty sequence), and the reverse
// direction walks it backwards from that last valid step.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

enum class Cell { rnn, gru, lstm };
enum class Act { sigmoid, tanh, relu };

struct RnnSpec {
  Cell cell = Cell::rnn;
  DType dtype = DType::f32;
  DType len_type = DType::i32;
  int64_t batch = 0, seq = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;  // direction "reverse" (bidirectional: direction 1 runs reversed)
  bool lbr = false;           // GRU linear_before_reset
  int states = 1;             // state tensors: hidden (and cell for LSTM)
  int gates = 1;              // gate blocks in W and R
  int bias_gates = 1;         // gate blocks in B (GRU with linear_before_reset: 4)
  std::vector<Act> acts;
  double clip = 0;
  // INFERENCE_PRECISION_HINT=bf16 (attribute bf16_weights, set by emit.py): PanelGemv takes R
  // in bf16 where the host has bf16 dot products (rnn_gemv.hpp)
  bool bf16_weights = false;
  // A com.microsoft DynamicQuantizeLSTM (attributes int8_recurrence_scales and int8_input_scales,
  // set by emit.py from the frontend's rt_info): R's and W's row scales, [dirs * gh()] each in
  // their row order. The batch-1 PanelGemv recurrence then runs on the integers with h quantized
  // at each step and X once, as ONNX Runtime runs that op (rnn_gemv.hpp, rnn_gemm.cpp); empty
  // otherwise, or with OPFORGE_CPU_RNN_INT8=0.
  std::vector<float> r_int8_scales, w_int8_scales;

  // Reads and checks the node (attributes against the input shapes): CompileFailure naming
  // what is wrong, so that a bad node never reaches a kernel that would read out of bounds.
  RnnSpec(const NodeDesc& n, Cell c);

  int in_len() const { return 1 + states; }
  int in_w() const { return 2 + states; }
  int in_r() const { return 3 + states; }
  int in_b() const { return 4 + states; }
  int64_t gh() const { return gates * hidden; }
  bool reversed(int64_t d) const { return reverse_only || d == 1; }
  // The activations oneDNN's primitives hard-wire (sigmoid gates, tanh candidate/cell).
  bool default_acts() const;
};

// Sequence lengths clamped to [0, seq], as the reference clamps them.
void read_lengths(const RnnSpec& s, const void* data, int64_t* out);

// Threads for the per-step work (the recurrence): one fork/join per step pays off only for wide
// steps. Narrow ones (a text model's batch 1-8, hidden 128-256: a few MFLOP per step) run on one
// thread: measured on 2 shared cores, the per-step barriers made 2 threads 2-400x slower than
// one whenever the other thread was descheduled, and OpenVINO's 2-thread figure was its 1-thread
// one. The input projection (all steps at once) still uses every thread.
int recurrence_threads(const RnnSpec& s, int max_threads);

// Whether the general path runs the recurrence as PanelGemv products (rnn_gemv.hpp), one
// direction at a time: f32, constant R, batch 1 (2 when bidirectional), where the step is a
// matrix-vector product bound by reading R.
bool gemv_recurrence(const RnnSpec& s, bool r_const);

// The general path; always succeeds for a valid node.
std::unique_ptr<Kernel> make_rnn_gemm(const NodeDesc& n, const RnnSpec& s);
// The oneDNN primitive path, or nullptr when oneDNN cannot run this node. `fallback` runs the
// requests whose sequence lengths (a run-time input) are not all full.
std::unique_ptr<Kernel> make_rnn_onednn(const NodeDesc& n, const RnnSpec& s, std::unique_ptr<Kernel> fallback);

// Picks the implementation for the node.
std::unique_ptr<Kernel> make_recurrent(NodeDesc& n, Cell c);
std::string check_recurrent(const NodeDesc& n);

// Offsets of buffers carved out of one scratch block, each aligned for vector loads.
struct ScratchLayout {
  size_t total = 0;
  size_t add(size_t bytes) {
    const size_t at = total;
    total += (bytes + 63) / 64 * 64;
    return at;
  }
};

}  // namespace opforge_cpu
