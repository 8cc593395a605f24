// The recurrent sequences as oneDNN RNN primitives (see recurrent.hpp for when this path runs).
// What differs from the OpenVINO op, and how it is bridged once at compile time:
//  - gate order: oneDNN's LSTM is i, f, c~, o where the op's is f, i, c, o (W, R and B blocks
//    permuted before packing); GRU's u, r, o and vanilla RNN's single gate match z, r, h;
//  - oneDNN's lbr_gru bias is u, r, o, u' like the op's z, r, Wb_h, Rb_h; its gru (not lbr)
//    computes o from (r * h) like linear_before_reset = false;
//  - weights are packed into the layout the primitive asks for (format any), once;
//  - layouts: X [batch, seq, input] is oneDNN's ntc; Y [batch, dirs, seq, hidden] is ntc too for
//    one direction (written in place), a bidirectional run writes ntc [batch, seq, 2*hidden]
//    into scratch and is split into Y; states [batch, dirs, hidden] are copied to and from
//    oneDNN's ldnc [1, dirs, batch, hidden] (small).
// oneDNN has no per-batch sequence lengths: a node whose lengths are a run-time input carries
// the GEMM path and hands it each request whose lengths are not all full.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/recurrent.hpp"

namespace opforge_cpu {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Copies a plain [dirs, gates*rows_per_gate*cols] weight tensor with gate blocks reordered by
// `perm` (new block g takes old block perm[g]).
std::vector<float> permute_gates(const float* src, int64_t dirs, int gates, int64_t block, const int* perm) {
  std::vector<float> out(static_cast<size_t>(dirs * gates * block));
  for (int64_t d = 0; d < dirs; ++d)
    for (int g = 0; g < gates; ++g)
      std::memcpy(out.data() + (d * gates + g) * block, src + (d * gates + perm[g]) * block, block * sizeof(float));
  return out;
}

class RnnDnnlKernel : public Kernel {
  struct DnnlBound : Bound {
    std::unordered_map<int, dnnl::memory> args;
    std::unique_ptr<Bound> fallback;
  };

 public:
  RnnDnnlKernel(const NodeDesc& n, const RnnSpec& s, std::unique_ptr<Kernel> fallback)
      : s_(s), fallback_(std::move(fallback)) {
    const int64_t N = s.batch, L = s.seq, I = s.input, H = s.hidden, D = s.dirs, G = s.gates;
    const auto dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                     : s.reverse_only ? dnnl::rnn_direction::unidirectional_right2left
                                      : dnnl::rnn_direction::unidirectional_left2right;
    src_layer_ = dnnl::memory::desc({L, N, I}, dt::f32, tag::ntc);
    dst_layer_ = dnnl::memory::desc({L, N, D * H}, dt::f32, tag::ntc);
    iter_ = dnnl::memory::desc({1, D, N, H}, dt::f32, tag::ldnc);
    const dnnl::memory::desc none;
    auto w_any = dnnl::memory::desc({1, D, I, G, H}, dt::f32, tag::any);
    auto r_any = dnnl::memory::desc({1, D, H, G, H}, dt::f32, tag::any);
    // the op's W [D, G*H, I] is oneDNN's ldgoi (l, d, g, o, i from outer to inner), R likewise
    auto w_user = dnnl::memory::desc({1, D, I, G, H}, dt::f32, tag::ldgoi);
    auto r_user = dnnl::memory::desc({1, D, H, G, H}, dt::f32, tag::ldgoi);
    auto b_user = dnnl::memory::desc({1, D, s.bias_gates, H}, dt::f32, tag::ldgo);
    const auto fwd = dnnl::prop_kind::forward_inference;
    auto& eng = cpu_engine();
    const auto attr = default_attr();
    dnnl::primitive_desc_base pd;
    // oneDNN fixes a primitive's thread count when it is created (OpenMP's default then): create
    // it under the recurrence's count (see recurrence_threads), run it under the same.
    threads_ = recurrence_threads(s, n.num_threads);
    omp_set_num_threads(threads_);
    struct Restore {
      int count;
      ~Restore() { omp_set_num_threads(count); }
    } restore{std::max(1, n.num_threads)};
    switch (s.cell) {
      case Cell::rnn: {
        const auto act = s.acts[0] == Act::relu ? dnnl::algorithm::eltwise_relu
                         : s.acts[0] == Act::tanh ? dnnl::algorithm::eltwise_tanh
                                                  : dnnl::algorithm::eltwise_logistic;
        dnnl::vanilla_rnn_forward::primitive_desc p(eng, fwd, act, dir, src_layer_, iter_, w_any, r_any, b_user,
                                                    dst_layer_, iter_, attr);
        prim_ = dnnl::vanilla_rnn_forward(p);
        pd = p;
        break;
      }
      case Cell::gru: {
        if (s.lbr) {
          dnnl::lbr_gru_forward::primitive_desc p(eng, fwd, dir, src_layer_, iter_, w_any, r_any, b_user, dst_layer_,
                                                  iter_, attr);
          prim_ = dnnl::lbr_gru_forward(p);
          pd = p;
        } else {
          dnnl::gru_forward::primitive_desc p(eng, fwd, dir, src_layer_, iter_, w_any, r_any, b_user, dst_layer_,
                                              iter_, attr);
          prim_ = dnnl::gru_forward(p);
          pd = p;
        }
        break;
      }
      case Cell::lstm: {
        dnnl::lstm_forward::primitive_desc p(eng, fwd, dir, src_layer_, iter_, iter_, w_any, r_any, none, none,
                                             b_user, dst_layer_, iter_, iter_, attr);
        prim_ = dnnl::lstm_forward(p);
        pd = p;
        break;
      }
    }
    const float* w = static_cast<const float*>(n.inputs[s.in_w()].const_data);
    const float* r = static_cast<const float*>(n.inputs[s.in_r()].const_data);
    const float* b = static_cast<const float*>(n.inputs[s.in_b()].const_data);
    const auto w_md = pd.query_md(dnnl::query::weights_md, 0);
    const auto r_md = pd.query_md(dnnl::query::weights_md, 1);
    if (s.cell == Cell::lstm) {
      static const int kOneDnnLstm[4] = {1, 0, 2, 3};  // oneDNN i, f, c, o from the op's f, i, c, o
      weights_layer_ = pack_constant(permute_gates(w, D, 4, H * I, kOneDnnLstm).data(), w_user, w_md);
      weights_iter_ = pack_constant(permute_gates(r, D, 4, H * H, kOneDnnLstm).data(), r_user, r_md);
      bias_ = pack_constant(permute_gates(b, D, 4, H, kOneDnnLstm).data(), b_user, b_user);
    } else {
      weights_layer_ = pack_constant(w, w_user, w_md);
      weights_iter_ = pack_constant(r, r_user, r_md);
      bias_ = pack_constant(b, b_user, b_user);
    }
    const char* info = pd.impl_info_str();
    impl_ = std::string("onednn_rnn:") + (info ? info : "?");
    scratch_md_ = pd.scratchpad_desc();
    ScratchLayout lay;
    o_pad_ = lay.add(scratch_md_.get_size());
    const size_t state = static_cast<size_t>(D * N * H) * sizeof(float);
    o_h0_ = lay.add(state);
    o_c0_ = lay.add(s.cell == Cell::lstm ? state : 0);
    o_hn_ = lay.add(state);
    o_cn_ = lay.add(s.cell == Cell::lstm ? state : 0);
    o_y_ = lay.add(D == 2 ? static_cast<size_t>(N * L * D * H) * sizeof(float) : 0);
    o_len_ = lay.add(static_cast<size_t>(N) * sizeof(int64_t));
    scratch_ = std::max(lay.total, fallback_ ? fallback_->scratch_bytes() : size_t{0});
  }

  std::string impl_name() const override { return impl_; }
  size_t scratch_bytes() const override { return scratch_; }
  bool packs_input(int i) const override {
    const bool mine = i == s_.in_w() || i == s_.in_r() || i == s_.in_b();
    return mine && (!fallback_ || fallback_->packs_input(i));
  }

  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                              void* scratch) override {
    auto b = std::make_unique<DnnlBound>();
    auto& eng = cpu_engine();
    char* sc = static_cast<char*>(scratch);
    auto& a = b->args;
    a.emplace(DNNL_ARG_SRC_LAYER, dnnl::memory(src_layer_, eng, in[0].data));
    a.emplace(DNNL_ARG_DST_LAYER, dnnl::memory(dst_layer_, eng, s_.dirs == 2 ? sc + o_y_ : out[0].data));
    a.emplace(DNNL_ARG_SRC_ITER, dnnl::memory(iter_, eng, sc + o_h0_));
    a.emplace(DNNL_ARG_DST_ITER, dnnl::memory(iter_, eng, sc + o_hn_));
    if (s_.cell == Cell::lstm) {
      a.emplace(DNNL_ARG_SRC_ITER_C, dnnl::memory(iter_, eng, sc + o_c0_));
      a.emplace(DNNL_ARG_DST_ITER_C, dnnl::memory(iter_, eng, sc + o_cn_));
    }
    a.emplace(DNNL_ARG_WEIGHTS_LAYER, weights_layer_);
    a.emplace(DNNL_ARG_WEIGHTS_ITER, weights_iter_);
    a.emplace(DNNL_ARG_BIAS, bias_);
    if (scratch_md_.get_size()) a.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, sc + o_pad_));
    if (fallback_) b->fallback = fallback_->bind(in, n_in, out, n_out, scratch);
    return b;
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* bd = static_cast<DnnlBound*>(bound);
    char* sc = static_cast<char*>(ctx.scratch);
    const int64_t N = s_.batch, L = s_.seq, H = s_.hidden, D = s_.dirs;
    if (fallback_) {
      int64_t* len = reinterpret_cast<int64_t*>(sc + o_len_);
      read_lengths(s_, in[s_.in_len()].data, len);
      if (!std::all_of(len, len + N, [&](int64_t v) { return v == L; })) {
        fallback_->run(ctx, in, out, bd->fallback.get());
        return;
      }
    }
    const size_t row = static_cast<size_t>(H) * sizeof(float);
    // [batch, dirs, hidden] <-> ldnc [dirs, batch, hidden]
    auto to_ldnc = [&](const void* src, size_t off) {
      for (int64_t b = 0; b < N; ++b)
        for (int64_t d = 0; d < D; ++d)
          std::memcpy(sc + off + (d * N + b) * row, static_cast<const char*>(src) + (b * D + d) * row, row);
    };
    auto from_ldnc = [&](size_t off, void* dst) {
      for (int64_t b = 0; b < N; ++b)
        for (int64_t d = 0; d < D; ++d)
          std::memcpy(static_cast<char*>(dst) + (b * D + d) * row, sc + off + (d * N + b) * row, row);
    };
    to_ldnc(in[1].data, o_h0_);
    if (s_.cell == Cell::lstm) to_ldnc(in[2].data, o_c0_);
    // The primitive's input projection shares the recurrence's thread count: it cannot be split
    // off, and the steps dominate (a text model's 128 steps against one projection).
    omp_set_num_threads(threads_);
    prim_.execute(*ctx.stream, bd->args);
    omp_set_num_threads(ctx.num_threads);
    from_ldnc(o_hn_, out[1].data);
    if (s_.cell == Cell::lstm) from_ldnc(o_cn_, out[2].data);
    if (D == 2) {
      // ntc [batch, seq, 2*hidden] -> [batch, 2, seq, hidden]
      const char* y2 = sc + o_y_;
      char* y = static_cast<char*>(out[0].data);
      for (int64_t b = 0; b < N; ++b)
        for (int64_t t = 0; t < L; ++t)
          for (int64_t d = 0; d < 2; ++d)
            std::memcpy(y + ((b * 2 + d) * L + t) * row, y2 + ((b * L + t) * 2 + d) * row, row);
    }
  }

 private:
  RnnSpec s_;
  std::unique_ptr<Kernel> fallback_;
  dnnl::primitive prim_;
  dnnl::memory::desc src_layer_, dst_layer_, iter_, scratch_md_;
  dnnl::memory weights_layer_, weights_iter_, bias_;
  std::string impl_;
  int threads_ = 1;
  size_t o_pad_ = 0, o_h0_ = 0, o_c0_ = 0, o_hn_ = 0, o_cn_ = 0, o_y_ = 0, o_len_ = 0, scratch_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_rnn_onednn(const NodeDesc& n, const RnnSpec& s, std::unique_ptr<Kernel> fallback) {
  try {
    return std::make_unique<RnnDnnlKernel>(n, s, std::move(fallback));
  } catch (const dnnl::error&) {
    return nullptr;  // a configuration this oneDNN build does not implement: the GEMM path runs it
  }
}

}  // namespace opforge_cpu
