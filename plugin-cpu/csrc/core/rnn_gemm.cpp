// The general recurrent path (see recurrent.hpp): every configuration the op allows. Per node:
//   xp = X W^T for all time steps and both directions at once (one matrix product),
// then per step s (every direction and batch element at the same step index):
//   rec = H R^T, one product per direction; gates element-wise in T.
// GRU without linear_before_reset needs (r * H) R_h^T, so its step is two products: z and r
// first, then the candidate. A batch element past its own length keeps its state; its rows are
// computed with the others (cheaper than compacting) and ignored.
// f32 products are oneDNN matmuls with constant weights packed once; f64 (which oneDNN's CPU
// matmul lacks) uses a plain loop. Batch 1 (2 when bidirectional) with constant R (f32) takes
// the recurrence products as PanelGemv instead (rnn_gemv.hpp) and walks one direction at a
// time: all steps of direction 0, then all of direction 1 (or the two side by side on two
// threads), so that only one direction's R (1 MiB at hidden 256) has to stay in L2, where
// stepping both directions together cycles 2 MiB through it.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "core/elementwise.hpp"
#include "core/primitive_log.hpp"
#include "core/recurrent.hpp"
#include "core/rnn_activations.hpp"
#include "core/rnn_gemv.hpp"

namespace opforge_cpu {

namespace {

// C[b] = A[b] x B[b]: A dense [batch, M, K], C dense [batch, M, N], B a strided view
// [batch, K, N] of a weight tensor (the transposed W or R of each direction).
struct GemmShape {
  int64_t batch, M, K, N;
  int64_t b_bs, b_ks, b_ns;  // element strides of B's view
};

template <class T> class Gemm {
 public:
  struct Args {
    std::unordered_map<int, dnnl::memory> mem;  // f32
    const T* a = nullptr;
    const T* b = nullptr;
    T* c = nullptr;
  };

  Gemm() = default;
  // b_const: the weights when constant (packed here, never read again), else nullptr.
  // bf16_math: oneDNN may compute in bf16 (fpmath_mode bf16: AMX on this host's kind of CPU).
  Gemm(const GemmShape& g, const T* b_const, bool bf16_math = false) : g_(g) {
    empty_ = g.batch == 0 || g.M == 0 || g.N == 0 || g.K == 0;
    if (empty_) return;
    if constexpr (std::is_same_v<T, float>) {
      using dt = dnnl::memory::data_type;
      a_md_ = dnnl::memory::desc({g.batch, g.M, g.K}, dt::f32, {g.M * g.K, g.K, 1});
      c_md_ = dnnl::memory::desc({g.batch, g.M, g.N}, dt::f32, {g.M * g.N, g.N, 1});
      b_md_ = dnnl::memory::desc({g.batch, g.K, g.N}, dt::f32, {g.b_bs, g.b_ks, g.b_ns});
      const auto want = b_const ? dnnl::memory::desc({g.batch, g.K, g.N}, dt::f32, dnnl::memory::format_tag::any) : b_md_;
      auto attr = default_attr();
      if (bf16_math) attr.set_fpmath_mode(dnnl::fpmath_mode::bf16);
      dnnl::matmul::primitive_desc pd(cpu_engine(), a_md_, want, c_md_, attr);
      prim_ = dnnl::matmul(pd);
      note_primitive(pd);
      scratch_md_ = pd.scratchpad_desc();
      if (b_const) packed_ = pack_constant(b_const, b_md_, pd.weights_desc());
    } else if (b_const) {
      // dense copy [batch, K, N]
      own_.resize(static_cast<size_t>(g.batch * g.K * g.N));
      for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t k = 0; k < g.K; ++k)
          for (int64_t j = 0; j < g.N; ++j) own_[(b * g.K + k) * g.N + j] = b_const[b * g.b_bs + k * g.b_ks + j * g.b_ns];
      g_.b_bs = g.K * g.N;
      g_.b_ks = g.N;
      g_.b_ns = 1;
    }
    packed_b_ = b_const != nullptr;
  }

  size_t scratch_bytes() const { return empty_ ? 0 : scratch_md_.get_size(); }

  // b_runtime: the weights' data when they were not constant.
  Args bind(const T* a, const T* b_runtime, T* c, void* scratch) const {
    Args r;
    r.a = a;
    r.b = packed_b_ ? own_.data() : b_runtime;
    r.c = c;
    if constexpr (std::is_same_v<T, float>) {
      if (empty_) return r;
      auto& eng = cpu_engine();
      r.mem.emplace(DNNL_ARG_SRC, dnnl::memory(a_md_, eng, const_cast<T*>(a)));
      r.mem.emplace(DNNL_ARG_WEIGHTS, packed_b_ ? packed_ : dnnl::memory(b_md_, eng, const_cast<T*>(b_runtime)));
      r.mem.emplace(DNNL_ARG_DST, dnnl::memory(c_md_, eng, c));
      if (scratch_md_.get_size()) r.mem.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, scratch));
    }
    return r;
  }

  void run(const Args& r, dnnl::stream& s, int threads) const {
    const GemmShape& g = g_;
    if (empty_) {
      // an empty sum is zero (oneDNN leaves the destination unwritten for K = 0)
      std::fill(r.c, r.c + g.batch * g.M * g.N, T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      prim_.execute(s, r.mem);
    } else {
      parallel_range(g.batch * g.M, threads, [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          const int64_t b = row / g.M;
          const T* a = r.a + row * g.K;
          T* c = r.c + row * g.N;
          const T* bm = r.b + b * g.b_bs;
          for (int64_t j = 0; j < g.N; ++j) {
            T acc = 0;
            for (int64_t k = 0; k < g.K; ++k) acc += a[k] * bm[k * g.b_ks + j * g.b_ns];
            c[j] = acc;
          }
        }
      }, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, g.K * g.N)));
    }
  }

 private:
  GemmShape g_{};
  bool empty_ = true, packed_b_ = false;
  dnnl::memory::desc a_md_, b_md_, c_md_, scratch_md_;
  dnnl::matmul prim_;
  dnnl::memory packed_;
  std::vector<T> own_;
};

template <class T> class RnnGemmKernel : public Kernel {
  struct GemmBound : Bound {
    typename Gemm<T>::Args proj;
    std::vector<typename Gemm<T>::Args> rec, cand;  // by direction
  };

 public:
  RnnGemmKernel(const NodeDesc& n, const RnnSpec& s) : s_(s) {
    const int64_t N = s.batch, L = s.seq, I = s.input, H = s.hidden, D = s.dirs, GH = s.gh();
    split_gru_ = s.cell == Cell::gru && !s.lbr;
    rec_n_ = split_gru_ ? 2 * H : GH;
    auto const_of = [&](int i) { return n.is_const(i) ? static_cast<const T*>(n.inputs[i].const_data) : nullptr; };
    const T* w = const_of(s.in_w());
    const T* r = const_of(s.in_r());
    w_packed_ = w != nullptr;
    r_packed_ = r != nullptr;
    // X as [N*L, I] times W^T viewed as [I, D*GH] (W is [D*GH, I] row-major).
    // under the bf16 hint in bf16 like the recurrence (AMX: 0.14 against 0.57 ms for bilstm_text's
    // 128 x 128 x 2048 at 1 thread)
    proj_ = Gemm<T>({1, N * L, I, D * GH, D * GH * I, 1, I}, w, s.bf16_weights);
    // per direction d: H_d [N, H] times R_d^T [H, rec_n] (the first rec_n rows of R_d). One
    // product per direction: measured faster than one batched over both (0.12 vs 0.18 ms for
    // 2 x [8, 256] x [256, 1024]).
    // oneDNN fixes a primitive's thread count when it is created (OpenMP's default then), so
    // the per-step products are created under the recurrence's count.
    step_threads_ = recurrence_threads(s, n.num_threads);
    if constexpr (std::is_same_v<T, float>) {
      gemv_ = gemv_recurrence(s, r != nullptr);
      // R_d^T as B(k, n) = R_d[n, k]
      // A DynamicQuantizeLSTM (RnnSpec::r_int8_scales): first R on the integers (h quantized at
      // each step), then the input projection with X quantized as one u8 tensor, as ONNX Runtime
      // runs that op; all of it or none (every direction's R and W exactly the multiples of their
      // row scales, VNNI), else the f32 recurrence on the dequantized weights.
      bool int8 = gemv_ && w && !s.r_int8_scales.empty() && !s.w_int8_scales.empty() && rec_n_ == GH;
      for (int64_t d = 0; int8 && d < D; ++d) {
        gemv_rec_.emplace_back(r + d * GH * H, H, rec_n_, 1, H, s.r_int8_scales.data() + d * GH);
        int8 = gemv_rec_.back().int8();
      }
      if (int8) {
        proj_int8_ = std::make_unique<PanelGemv>(w, I, D * GH, 1, I, s.w_int8_scales.data());
        int8 = proj_int8_->int8();
      }
      if (!int8) {
        gemv_rec_.clear();
        proj_int8_.reset();
      }
      // R_d^T as B(k, n) = R_d[n, k]
      for (int64_t d = 0; gemv_ && !int8 && d < D; ++d) {
        const float* rd = r + d * GH * H;
        gemv_rec_.emplace_back(rd, H, rec_n_, 1, H, s.bf16_weights);
        if (split_gru_) gemv_cand_.emplace_back(rd + 2 * H * H, H, H, 1, H, s.bf16_weights);
      }
    }
    if (!gemv_) {
      with_threads(step_threads_, [&] {
        for (int64_t d = 0; d < D; ++d) {
          const T* rd = r ? r + d * GH * H : nullptr;
          rec_.emplace_back(GemmShape{1, N, H, rec_n_, GH * H, 1, H}, rd);
          if (split_gru_) cand_.emplace_back(GemmShape{1, N, H, H, GH * H, 1, H}, rd ? rd + 2 * H * H : nullptr);
        }
      });
    }
    if (const T* b = const_of(s.in_b())) bias_.assign(b, b + D * s.bias_gates * H);
    ScratchLayout lay;
    const size_t t = sizeof(T);
    size_t mm = proj_.scratch_bytes();
    for (const auto& g : rec_) mm = std::max(mm, g.scratch_bytes());
    for (const auto& g : cand_) mm = std::max(mm, g.scratch_bytes());
    o_mm_ = lay.add(mm);
    o_xp_ = lay.add(static_cast<size_t>(N * L * D * GH) * t);
    o_rec_ = lay.add(static_cast<size_t>(D * N * rec_n_) * t);
    o_h_ = lay.add(static_cast<size_t>(D * N * H) * t);
    o_c_ = lay.add(s.cell == Cell::lstm ? static_cast<size_t>(D * N * H) * t : 0);
    o_gates_ = lay.add(static_cast<size_t>(D * N * GH) * t);
    o_rh_ = lay.add(split_gru_ ? static_cast<size_t>(D * N * H) * t : 0);
    o_cand_ = lay.add(split_gru_ ? static_cast<size_t>(D * N * H) * t : 0);
    o_len_ = lay.add(static_cast<size_t>(N) * sizeof(int64_t));
    scratch_ = lay.total;
  }

  std::string impl_name() const override {
    if (gemv_) return std::string("rnn_gemm:panel_gemv_") + gemv_rec_[0].isa_name();
    return std::is_same_v<T, float> ? "rnn_gemm:onednn_matmul" : "rnn_gemm:f64";
  }
  size_t scratch_bytes() const override { return scratch_; }
  bool packs_input(int i) const override {
    return (i == s_.in_w() && w_packed_) || (i == s_.in_r() && r_packed_) || (i == s_.in_b() && !bias_.empty());
  }

  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView*, size_t, void* scratch) override {
    auto b = std::make_unique<GemmBound>();
    char* sc = static_cast<char*>(scratch);
    auto buf = [&](size_t off) { return reinterpret_cast<T*>(sc + off); };
    const T* w = w_packed_ ? nullptr : in[s_.in_w()].ptr<T>();
    const T* r = r_packed_ ? nullptr : in[s_.in_r()].ptr<T>();
    b->proj = proj_.bind(in[0].ptr<T>(), w, buf(o_xp_), sc + o_mm_);
    const int64_t N = s_.batch, H = s_.hidden, GH = s_.gh();
    for (int64_t d = 0; d < static_cast<int64_t>(rec_.size()); ++d) {
      const T* rd = r ? r + d * GH * H : nullptr;
      b->rec.push_back(rec_[d].bind(buf(o_h_) + d * N * H, rd, buf(o_rec_) + d * N * rec_n_, sc + o_mm_));
      if (split_gru_)
        b->cand.push_back(cand_[d].bind(buf(o_rh_) + d * N * H, rd ? rd + 2 * H * H : nullptr, buf(o_cand_) + d * N * H,
                                        sc + o_mm_));
    }
    return b;
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* bd = static_cast<GemmBound*>(bound);
    char* sc = static_cast<char*>(ctx.scratch);
    auto buf = [&](size_t off) { return reinterpret_cast<T*>(sc + off); };
    const int64_t N = s_.batch, L = s_.seq, H = s_.hidden, D = s_.dirs;
    int64_t* len = reinterpret_cast<int64_t*>(sc + o_len_);
    read_lengths(s_, in[s_.in_len()].data, len);
    const int64_t max_len = N ? *std::max_element(len, len + N) : 0;
    T* y = out[0].ptr<T>();
    if (!std::all_of(len, len + N, [&](int64_t v) { return v == L; })) std::memset(y, 0, out[0].bytes());
    T* h = buf(o_h_);
    T* c = buf(o_c_);
    const bool lstm = s_.cell == Cell::lstm;
    for (int64_t b = 0; b < N; ++b)
      for (int64_t d = 0; d < D; ++d) {
        std::memcpy(h + (d * N + b) * H, in[1].ptr<T>() + (b * D + d) * H, H * sizeof(T));
        if (lstm) std::memcpy(c + (d * N + b) * H, in[2].ptr<T>() + (b * D + d) * H, H * sizeof(T));
      }
    const T* bias = bias_.empty() ? in[s_.in_b()].ptr<T>() : bias_.data();
    // the input projection is one large product: every thread
    if (max_len > 0 && proj_int8_) {
      if constexpr (std::is_same_v<T, float>)
        proj_int8_->run(in[0].ptr<float>(), s_.input, N * L, buf(o_xp_), D * s_.gh());
    } else if (max_len > 0) {
      proj_.run(bd->proj, *ctx.stream, ctx.num_threads);
    }
    if (gemv_) {
      run_gemv(buf, bias, len, max_len, y, ctx.num_threads);
    } else {
      // oneDNN's matmuls of the steps run with the count they were created for
      with_threads(step_threads_, [&] { run_steps(ctx, bd, buf, bias, len, max_len, y); });
    }
    for (int64_t b = 0; b < N; ++b)
      for (int64_t d = 0; d < D; ++d)
        for (int k = 0; k < s_.states; ++k) {
          T* dst = out[1 + k].ptr<T>() + (b * D + d) * H;
          const T* src = (k == 0 ? h : c) + (d * N + b) * H;
          if (len[b] > 0) std::memcpy(dst, src, H * sizeof(T));
          else std::fill(dst, dst + H, T(0));
        }
  }

 private:
  // One direction's steps, every batch element in turn (see the header comment).
  template <class Buf> void gemv_direction(Buf buf, const T* bias, const int64_t* len, int64_t max_len, T* y,
                                           int64_t d) const {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t N = s_.batch, H = s_.hidden, D = s_.dirs, L = s_.seq;
      for (int64_t step = 0; step < max_len; ++step) {
        gemv_rec_[d].run(buf(o_h_) + d * N * H, H, N, buf(o_rec_) + d * N * rec_n_, rec_n_);
        if (split_gru_) {
          for (int64_t b = 0; b < N; ++b)
            if (step < len[b]) gru_reset_gate(buf, bias, d * N + b, d, b, s_.reversed(d) ? len[b] - 1 - step : step);
          gemv_cand_[d].run(buf(o_rh_) + d * N * H, H, N, buf(o_cand_) + d * N * H, H);
        }
        for (int64_t b = 0; b < N; ++b) {
          if (step >= len[b]) continue;
          const int64_t t = s_.reversed(d) ? len[b] - 1 - step : step, row = d * N + b;
          cell(buf, bias, row, d, b, t);
          std::memcpy(y + ((b * D + d) * L + t) * H, buf(o_h_) + row * H, H * sizeof(T));
        }
      }
    }
  }

  template <class Buf> void run_gemv(Buf buf, const T* bias, const int64_t* len, int64_t max_len, T* y,
                                     int threads) const {
    // two directions on two threads: one fork per inference, no barrier inside the steps
    if (s_.dirs == 2 && threads >= 2) {
      parallel_slots(2, [&](int id, int cnt) {
        for (int64_t d = id; d < 2; d += cnt) gemv_direction(buf, bias, len, max_len, y, d);
      });
    } else {
      for (int64_t d = 0; d < s_.dirs; ++d) gemv_direction(buf, bias, len, max_len, y, d);
    }
  }

  template <class Buf> void run_steps(RunContext& ctx, GemmBound* bd, Buf buf, const T* bias, const int64_t* len,
                                      int64_t max_len, T* y) {
    const int64_t N = s_.batch, D = s_.dirs, L = s_.seq, H = s_.hidden;
    T* h = buf(o_h_);
    const int nt = step_threads_;
    // rows (d, b) per thread: enough gate values per chunk to pay for a fork
    const int64_t grain = std::max<int64_t>(1, 16384 / s_.gh());
    for (int64_t step = 0; step < max_len; ++step) {
      for (int64_t d = 0; d < D; ++d) rec_[d].run(bd->rec[d], *ctx.stream, nt);
      auto rows = [&](auto&& body) {
        parallel_range(D * N, nt, [&](int64_t r0, int64_t r1) {
          for (int64_t row = r0; row < r1; ++row) {
            const int64_t d = row / N, b = row % N;
            if (step >= len[b]) continue;
            const int64_t t = s_.reversed(d) ? len[b] - 1 - step : step;
            body(row, d, b, t);
          }
        }, grain);
      };
      if (split_gru_) {
        rows([&](int64_t row, int64_t d, int64_t b, int64_t t) { gru_reset_gate(buf, bias, row, d, b, t); });
        for (int64_t d = 0; d < D; ++d) cand_[d].run(bd->cand[d], *ctx.stream, nt);
      }
      rows([&](int64_t row, int64_t d, int64_t b, int64_t t) {
        cell(buf, bias, row, d, b, t);
        std::memcpy(y + ((b * D + d) * L + t) * H, h + row * H, H * sizeof(T));
      });
    }
  }

  T clipv(T v) const {
    const T c = static_cast<T>(s_.clip);
    return v < -c ? -c : (v > c ? c : v);
  }
  // g[j] = clip(x[j] + r[j] + bias[j]) for j < n (NaN passes the clip unchanged)
  void preact(T* g, const T* x, const T* r, const T* bias, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) g[j] = x[j] + r[j] + bias[j];
    if (s_.clip > 0)
      for (int64_t j = 0; j < n; ++j) g[j] = clipv(g[j]);
  }
  const T* xrow(T* xp, int64_t d, int64_t b, int64_t t) const { return xp + ((b * s_.seq + t) * s_.dirs + d) * s_.gh(); }

  // GRU without linear_before_reset, first half of a step: z and r, and r * H for the candidate.
  template <class Buf> void gru_reset_gate(Buf buf, const T* bias_all, int64_t row, int64_t d, int64_t b, int64_t t) const {
    const int64_t H = s_.hidden;
    T* g = buf(o_gates_) + row * s_.gh();
    preact(g, xrow(buf(o_xp_), d, b, t), buf(o_rec_) + row * rec_n_, bias_all + d * s_.bias_gates * H, 2 * H);
    activate(s_.acts[0], g, 2 * H);
    const T* h = buf(o_h_) + row * H;
    T* rh = buf(o_rh_) + row * H;
    for (int64_t k = 0; k < H; ++k) rh[k] = g[H + k] * h[k];
  }

  template <class Buf> void cell(Buf buf, const T* bias_all, int64_t row, int64_t d, int64_t b, int64_t t) const {
    const int64_t H = s_.hidden, GH = s_.gh();
    const T* x = xrow(buf(o_xp_), d, b, t);
    const T* r = buf(o_rec_) + row * rec_n_;
    const T* bias = bias_all + d * s_.bias_gates * H;
    T* g = buf(o_gates_) + row * GH;
    T* h = buf(o_h_) + row * H;
    switch (s_.cell) {
      case Cell::rnn:
        preact(g, x, r, bias, H);
        activate(s_.acts[0], g, H);
        std::memcpy(h, g, H * sizeof(T));
        break;
      case Cell::lstm: {
        // blocks f, i, c, o
        T* c = buf(o_c_) + row * H;
        preact(g, x, r, bias, GH);
        activate(s_.acts[0], g, 2 * H);
        activate(s_.acts[1], g + 2 * H, H);
        activate(s_.acts[0], g + 3 * H, H);
        for (int64_t k = 0; k < H; ++k) c[k] = g[k] * c[k] + g[H + k] * g[2 * H + k];
        T* hc = g + 2 * H;  // the candidate block is spent: h(C') goes there
        std::memcpy(hc, c, H * sizeof(T));
        activate(s_.acts[2], hc, H);
        for (int64_t k = 0; k < H; ++k) h[k] = g[3 * H + k] * hc[k];
        break;
      }
      case Cell::gru: {
        // blocks z, r, h
        T* hh = g + 2 * H;
        if (s_.lbr) {
          preact(g, x, r, bias, 2 * H);
          activate(s_.acts[0], g, 2 * H);
          for (int64_t k = 0; k < H; ++k) hh[k] = x[2 * H + k] + bias[2 * H + k] + g[H + k] * (r[2 * H + k] + bias[3 * H + k]);
        } else {
          const T* cand = buf(o_cand_) + row * H;
          for (int64_t k = 0; k < H; ++k) hh[k] = x[2 * H + k] + cand[k] + bias[2 * H + k];
        }
        if (s_.clip > 0)
          for (int64_t k = 0; k < H; ++k) hh[k] = clipv(hh[k]);
        activate(s_.acts[1], hh, H);
        for (int64_t k = 0; k < H; ++k) h[k] = (T(1) - g[k]) * hh[k] + g[k] * h[k];
        break;
      }
    }
  }

  RnnSpec s_;
  bool split_gru_ = false, w_packed_ = false, r_packed_ = false, gemv_ = false;
  std::vector<PanelGemv> gemv_rec_, gemv_cand_;  // by direction, when gemv_
  int64_t rec_n_ = 0;
  Gemm<T> proj_;
  std::unique_ptr<PanelGemv> proj_int8_;  // the input projection on the integers (DynamicQuantizeLSTM)
  std::vector<Gemm<T>> rec_, cand_;  // by direction
  int step_threads_ = 1;
  std::vector<T> bias_;  // B when constant
  size_t o_mm_ = 0, o_xp_ = 0, o_rec_ = 0, o_h_ = 0, o_c_ = 0, o_gates_ = 0, o_rh_ = 0, o_cand_ = 0, o_len_ = 0;
  size_t scratch_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_rnn_gemm(const NodeDesc& n, const RnnSpec& s) {
  if (s.dtype == DType::f32) return std::make_unique<RnnGemmKernel<float>>(n, s);
  if (s.dtype == DType::f64) return std::make_unique<RnnGemmKernel<double>>(n, s);
  throw CompileFailure(std::string("element type ") + dtype_name(s.dtype) + " is not supported (f32, f64)");
}

}  // namespace opforge_cpu
