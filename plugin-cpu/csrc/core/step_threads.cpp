// Small steps run on one thread. At 2 threads every oneDNN primitive (and every parallel loop of
// our own kernels) is an OpenMP fork/join with a static split: the second thread must be woken
// (a futex wake-up, tens of microseconds, once it stopped spinning) and the step ends only when
// both halves are done, so a step of ~10 us gains a few microseconds at best and, on a loaded
// host where the second thread is descheduled, waits for it a whole time slice. ONNX Runtime
// runs such nodes on the calling thread for the same reason. A primitive split for one thread
// (created while omp_get_max_threads() is 1) runs inline: no fork at all.
#include "core/step_threads.hpp"

#include <cstdlib>

#include "core/env_switch.hpp"

namespace opforge_cpu {

namespace {

double elements(const Shape& s) { return static_cast<double>(numel(s)); }

// A memory-bound element costs about as much as this many multiply-adds of a convolution
// (an AVX-512 core does ~30 GMAC/s in small convolutions and moves ~4 G f32 elements/s
// through L2 in an elementwise op).
constexpr double kElementCost = 8.0;

// Below this much work (~20 us at 1 thread) a step runs on one thread.
// OPFORGE_CPU_SERIAL_WORK overrides it (0: every step on all threads), for measuring.
double serial_threshold() {
  static const double value = env_double("OPFORGE_CPU_SERIAL_WORK", 600000.0);
  return value;
}

bool is(const std::string& t, const char* name) { return t == name; }

// Whether a lone small step gets every thread back (plan_step_threads). OPFORGE_CPU_LONE_STEP=0
// keeps it on one thread, for measuring the rule on a given host (read once).
bool lone_step_parallel() {
  static const bool on = env_switch_on("OPFORGE_CPU_LONE_STEP");
  return on;
}

}  // namespace

double step_work(const NodeDesc& d) {
  const std::string& t = d.type;
  double touched = 0;
  for (const auto& in : d.inputs) touched += elements(in.info.shape);
  for (const auto& out : d.outputs) touched += elements(out.shape);
  double work = touched * kElementCost;
  if (d.outputs.empty()) return work;
  const Shape& out = d.outputs[0].shape;
  // Convolutions (plain, grouped, int8): output elements x (weights / output channels), which
  // is C_in/G x kernel area for both weight layouts.
  if ((is(t, "Convolution") || is(t, "GroupConvolution") || is(t, "QuantizedConvolution")) && d.inputs.size() > 1 &&
      out.size() >= 2 && out[1] > 0) {
    double macs = elements(out) * elements(d.in(1).shape) / static_cast<double>(out[1]);
    return std::max(work, macs);
  }
  if ((is(t, "MatMul") || is(t, "QuantizedMatMul")) && !d.inputs.empty() && !d.in(0).shape.empty()) {
    const Shape& a = d.in(0).shape;
    int64_t k = d.attrs.b("transpose_a", false) && a.size() >= 2 ? a[a.size() - 2] : a.back();
    return std::max(work, elements(out) * static_cast<double>(k));
  }
  return work;
}

int step_threads(const NodeDesc& d, int max_threads) {
  if (max_threads <= 1) return 1;
  const std::string& t = d.type;
  // Kernels whose work is not in proportion to their tensors (recurrences over time, searches,
  // transforms, contractions of any arity) or that choose their own threads keep them all.
  static const char* const kKeep[] = {"LSTMSequence", "GRUSequence", "RNNSequence", "NonMaxSuppression", "DFT", "IDFT",
                                      "RDFT", "IRDFT", "Einsum", "ConvolutionBackpropData",
                                      "GroupConvolutionBackpropData", "QuantizedConvolutionBackpropData", "DeformableConvolution",
                                      "TopK", "Unique",
                                      "ROIAlign", "GridSample", "TfIdfVectorizer", "CumSum"};
  for (const char* k : kKeep)
    if (t == k) return max_threads;
  return step_work(d) < serial_threshold() ? 1 : max_threads;
}

std::vector<int> plan_step_threads(const std::vector<NodeDesc>& nodes, const std::vector<char>& keep_all,
                                   int max_threads) {
  const int n = static_cast<int>(nodes.size());
  std::vector<int> threads(n, max_threads);
  if (max_threads <= 1) return std::vector<int>(n, 1);
  for (int i = 0; i < n; ++i) threads[i] = keep_all[i] ? max_threads : step_threads(nodes[i], max_threads);
  // A small step alone between two parallel ones stays parallel: the worker is still spinning
  // from the step before, so its fork costs ~1 us, whereas one thread would let the worker
  // fall asleep and the next step pay its wake-up. bert_small's LayerNorms (MVN between
  // MatMuls) ran 5-9 % slower on one thread on a quiet host. Runs of small steps (a
  // squeeze-and-excitation block: pool, two tiny convolutions, gate, scale) stay on one.
  auto view = [&](int i) {
    const std::string& t = nodes[i].type;
    return t == "Reshape" || t == "Squeeze" || t == "Unsqueeze" || t == "Identity";
  };
  std::vector<int> lone;
  for (int i = 0; i < n && lone_step_parallel(); ++i) {
    if (threads[i] != 1 || view(i)) continue;
    int prev = i - 1, next = i + 1;
    while (prev >= 0 && view(prev)) --prev;
    while (next < n && view(next)) ++next;
    if (prev >= 0 && next < n && threads[prev] > 1 && threads[next] > 1) lone.push_back(i);
  }
  for (int i : lone) threads[i] = max_threads;
  return threads;
}

int reorder_threads(int64_t elements, int max_threads) {
  if (max_threads <= 1) return 1;
  return 2.0 * static_cast<double>(elements) * kElementCost < serial_threshold() ? 1 : max_threads;
}

}  // namespace opforge_cpu
