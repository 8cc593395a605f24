// The time loop shared by RNNSequence-5, GRUSequence-5 and LSTMSequence-5 (OpenVINO layouts:
// X [batch, seq, input], states [batch, dirs, hidden], W [dirs, gates*hidden, input],
// R [dirs, gates*hidden, hidden], B [dirs, gates*hidden], Y [batch, dirs, seq, hidden]).
// sequence_lengths limit each batch element; later Y positions are zero, the final states are
// those after the last valid step (zero for an empty sequence); the reverse direction walks each
// sequence backwards from its own last valid step. Computed in double, as the reference does.
#pragma once

#include <cmath>
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

enum class Cell { rnn, gru, lstm };

inline double rnn_act(const std::string& name, double x) {
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "tanh") return std::tanh(x);
  if (name == "relu") return x > 0 ? x : 0;
  throw KernelFailure("unsupported activation " + name);
}

template <class T, Cell C> class SequenceKernel : public Kernel {
 public:
  explicit SequenceKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    batch_ = xs[0];
    seq_ = xs[1];
    inp_ = xs[2];
    hidden_ = n.attrs.i("hidden_size");
    const std::string dir = n.attrs.s("direction", "forward");
    dirs_ = dir == "bidirectional" ? 2 : 1;
    reverse_only_ = dir == "reverse";
    acts_ = n.attrs.strings("activations");
    clip_ = n.attrs.f("clip", 0.0);
    lbr_ = C == Cell::gru && n.attrs.b("linear_before_reset", false);
    states_ = C == Cell::lstm ? 2 : 1;
    gates_ = C == Cell::rnn ? 1 : C == Cell::gru ? 3 : 4;
    len_type_ = n.in(1 + states_).dtype;
  }
  std::string impl_name() const override { return "sequence"; }

  double clipv(double v) const { return clip_ > 0 ? std::min(std::max(v, -clip_), clip_) : v; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const int s = states_;
    const T* x = in[0].ptr<T>();
    const T* w = in[2 + s].ptr<T>();
    const T* r = in[3 + s].ptr<T>();
    const T* b = in[4 + s].ptr<T>();
    const int64_t H = hidden_, G = gates_, I = inp_;
    const int64_t bias_n = (lbr_ ? 4 : G) * H;
    T* y = out[0].ptr<T>();
    std::fill(y, y + batch_ * dirs_ * seq_ * H, T(0));
    std::vector<double> h(H), c(H), g(G * H), rh(H), hn(H), cn(H);
    for (int64_t bt = 0; bt < batch_; ++bt) {
      int64_t len = load_index(len_type_, in[1 + s].data, bt);
      len = std::min<int64_t>(std::max<int64_t>(len, 0), seq_);
      for (int64_t d = 0; d < dirs_; ++d) {
        const bool rev = reverse_only_ || d == 1;
        const T* W = w + d * G * H * I;
        const T* R = r + d * G * H * H;
        const T* B = b + d * bias_n;
        for (int64_t k = 0; k < H; ++k) {
          h[k] = static_cast<double>(in[1].ptr<T>()[(bt * dirs_ + d) * H + k]);
          if (s == 2) c[k] = static_cast<double>(in[2].ptr<T>()[(bt * dirs_ + d) * H + k]);
        }
        for (int64_t step = 0; step < len; ++step) {
          const int64_t t = rev ? len - 1 - step : step;
          const T* xt = x + (bt * seq_ + t) * I;
          // gates = x W^T + bias (+ h R^T, except GRU's candidate gate)
          for (int64_t q = 0; q < G * H; ++q) {
            double acc = static_cast<double>(B[q]);
            const T* wr = W + q * I;
            for (int64_t i = 0; i < I; ++i) acc += static_cast<double>(xt[i]) * static_cast<double>(wr[i]);
            if (!(C == Cell::gru && q >= 2 * H)) {
              const T* rr = R + q * H;
              for (int64_t i = 0; i < H; ++i) acc += h[i] * static_cast<double>(rr[i]);
            }
            g[q] = acc;
          }
          if constexpr (C == Cell::rnn) {
            for (int64_t k = 0; k < H; ++k) hn[k] = rnn_act(acts_[0], clipv(g[k]));
          } else if constexpr (C == Cell::lstm) {
            for (int64_t k = 0; k < H; ++k) {
              const double f = rnn_act(acts_[0], clipv(g[k])), ig = rnn_act(acts_[0], clipv(g[H + k]));
              const double cc = rnn_act(acts_[1], clipv(g[2 * H + k])), o = rnn_act(acts_[0], clipv(g[3 * H + k]));
              cn[k] = f * c[k] + ig * cc;
              hn[k] = o * rnn_act(acts_[2], cn[k]);
            }
          } else {
            std::vector<double> z(H), rg(H);
            for (int64_t k = 0; k < H; ++k) {
              z[k] = rnn_act(acts_[0], clipv(g[k]));
              rg[k] = rnn_act(acts_[0], clipv(g[H + k]));
            }
            const T* Rh = R + 2 * H * H;
            for (int64_t k = 0; k < H; ++k) {
              double acc = 0;
              if (lbr_) {
                for (int64_t i = 0; i < H; ++i) acc += h[i] * static_cast<double>(Rh[k * H + i]);
                acc = g[2 * H + k] + rg[k] * (acc + static_cast<double>(B[3 * H + k]));
              } else {
                for (int64_t i = 0; i < H; ++i) acc += rg[i] * h[i] * static_cast<double>(Rh[k * H + i]);
                acc += g[2 * H + k];
              }
              const double hh = rnn_act(acts_[1], clipv(acc));
              hn[k] = (1 - z[k]) * hh + z[k] * h[k];
            }
          }
          h = hn;
          if (s == 2) c = cn;
          for (int64_t k = 0; k < H; ++k) y[((bt * dirs_ + d) * seq_ + t) * H + k] = static_cast<T>(h[k]);
        }
        for (int64_t k = 0; k < H; ++k) {
          out[1].ptr<T>()[(bt * dirs_ + d) * H + k] = static_cast<T>(len > 0 ? h[k] : 0.0);
          if (s == 2) out[2].ptr<T>()[(bt * dirs_ + d) * H + k] = static_cast<T>(len > 0 ? c[k] : 0.0);
        }
      }
    }
  }

 private:
  int64_t batch_ = 0, seq_ = 0, inp_ = 0, hidden_ = 0, dirs_ = 1;
  bool reverse_only_ = false, lbr_ = false;
  int states_ = 1, gates_ = 1;
  std::vector<std::string> acts_;
  double clip_ = 0;
  DType len_type_ = DType::i32;
};

template <Cell C> std::unique_ptr<Kernel> make_sequence(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<SequenceKernel<OPF_TYPE_OF(tag), C>>(n); });
  return k;
}

inline std::string check_sequence(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
