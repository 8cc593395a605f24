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
#include "core/threading.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <unordered_map>
#include <vector>

#include "core/primitive_log.hpp"
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
  // One primitive over directions [d0, d0 + dirs): all of them (bidirectional_concat), or, for
  // a bidirectional node with 2+ threads and steps too narrow for 3+ threads, one
  // unidirectional primitive per direction, the two run side by side on their own threads: one
  // fork per inference where threads inside the recurrence would fork at every step (see
  // recurrence_threads).
  struct Part {
    int64_t d0 = 0, dirs = 1;
    dnnl::primitive prim;
    dnnl::memory weights_layer, weights_iter, bias;
    dnnl::memory::desc dst_layer, iter, scratch_md;
    size_t o_pad = 0;
  };
  struct DnnlBound : Bound {
    std::vector<std::unordered_map<int, dnnl::memory>> args;  // by part
    std::vector<dnnl::stream> streams;                        // by part, for concurrent parts
    std::unique_ptr<Bound> fallback;
  };

 public:
  RnnDnnlKernel(const NodeDesc& n, const RnnSpec& s, std::unique_ptr<Kernel> fallback)
      : s_(s), fallback_(std::move(fallback)) {
    const int64_t N = s.batch, L = s.seq, I = s.input, H = s.hidden, D = s.dirs, G = s.gates;
    // (a wide step with 3+ threads for its recurrence keeps one primitive using them all)
    split_ = D == 2 && n.num_threads >= 2 && recurrence_threads(s, n.num_threads) <= 2;
    src_layer_ = dnnl::memory::desc({L, N, I}, dt::f32, tag::ntc);
    // oneDNN fixes a primitive's thread count when it is created (the runtime's count then):
    // create it under the count it runs with (see recurrence_threads; one per part when split).
    threads_ = split_ ? 1 : recurrence_threads(s, n.num_threads);
    // the op's weights in oneDNN's gate order: W [D, G*H, I] is oneDNN's ldgoi (l, d, g, o, i
    // from outer to inner), R likewise, B ldgo
    const float* w = static_cast<const float*>(n.inputs[s.in_w()].const_data);
    const float* r = static_cast<const float*>(n.inputs[s.in_r()].const_data);
    const float* b = static_cast<const float*>(n.inputs[s.in_b()].const_data);
    std::vector<float> wp, rp, bp;
    if (s.cell == Cell::lstm) {
      static const int kOneDnnLstm[4] = {1, 0, 2, 3};  // oneDNN i, f, c, o from the op's f, i, c, o
      wp = permute_gates(w, D, 4, H * I, kOneDnnLstm);
      rp = permute_gates(r, D, 4, H * H, kOneDnnLstm);
      bp = permute_gates(b, D, 4, H, kOneDnnLstm);
      w = wp.data();
      r = rp.data();
      b = bp.data();
    }
    ScratchLayout lay;
    with_threads(threads_, [&] {
    for (int64_t d0 = 0; d0 < D; d0 += split_ ? 1 : D) {
      Part part;
      part.d0 = d0;
      part.dirs = split_ ? 1 : D;
      const int64_t pd_dirs = part.dirs;
      const auto dir = pd_dirs == 2 ? dnnl::rnn_direction::bidirectional_concat
                       : s.reversed(d0) ? dnnl::rnn_direction::unidirectional_right2left
                                        : dnnl::rnn_direction::unidirectional_left2right;
      part.dst_layer = dnnl::memory::desc({L, N, pd_dirs * H}, dt::f32, tag::ntc);
      part.iter = dnnl::memory::desc({1, pd_dirs, N, H}, dt::f32, tag::ldnc);
      const auto pd = make_pd(part, dir, I, H, G);
      note_primitive(pd);
      const auto w_user = dnnl::memory::desc({1, pd_dirs, I, G, H}, dt::f32, tag::ldgoi);
      const auto r_user = dnnl::memory::desc({1, pd_dirs, H, G, H}, dt::f32, tag::ldgoi);
      const auto b_user = dnnl::memory::desc({1, pd_dirs, s.bias_gates, H}, dt::f32, tag::ldgo);
      part.weights_layer = pack_constant(w + d0 * G * H * I, w_user, pd.query_md(dnnl::query::weights_md, 0));
      part.weights_iter = pack_constant(r + d0 * G * H * H, r_user, pd.query_md(dnnl::query::weights_md, 1));
      part.bias = pack_constant(b + d0 * s.bias_gates * H, b_user, b_user);
      part.scratch_md = pd.scratchpad_desc();
      part.o_pad = lay.add(part.scratch_md.get_size());
      const char* info = pd.impl_info_str();
      impl_ = std::string("onednn_rnn:") + (info ? info : "?") + (split_ ? "+per_direction_threads" : "");
      parts_.push_back(std::move(part));
    }
    });
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
    const size_t state_row = static_cast<size_t>(s_.batch * s_.hidden) * sizeof(float);  // one direction
    for (const Part& p : parts_) {
      std::unordered_map<int, dnnl::memory> a;
      const size_t st = static_cast<size_t>(p.d0) * state_row;
      // Y itself for one direction (ntc [seq, batch, hidden] is [batch, 1, seq, hidden]), else
      // scratch: [batch, seq, 2*hidden] for both directions in one primitive, or
      // [batch, seq, hidden] per direction
      void* y = s_.dirs == 1 ? out[0].data
                             : sc + o_y_ + static_cast<size_t>(p.d0 * s_.batch * s_.seq * s_.hidden) * sizeof(float);
      a.emplace(DNNL_ARG_SRC_LAYER, dnnl::memory(src_layer_, eng, in[0].data));
      a.emplace(DNNL_ARG_DST_LAYER, dnnl::memory(p.dst_layer, eng, y));
      a.emplace(DNNL_ARG_SRC_ITER, dnnl::memory(p.iter, eng, sc + o_h0_ + st));
      a.emplace(DNNL_ARG_DST_ITER, dnnl::memory(p.iter, eng, sc + o_hn_ + st));
      if (s_.cell == Cell::lstm) {
        a.emplace(DNNL_ARG_SRC_ITER_C, dnnl::memory(p.iter, eng, sc + o_c0_ + st));
        a.emplace(DNNL_ARG_DST_ITER_C, dnnl::memory(p.iter, eng, sc + o_cn_ + st));
      }
      a.emplace(DNNL_ARG_WEIGHTS_LAYER, p.weights_layer);
      a.emplace(DNNL_ARG_WEIGHTS_ITER, p.weights_iter);
      a.emplace(DNNL_ARG_BIAS, p.bias);
      if (p.scratch_md.get_size()) a.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratch_md, eng, sc + p.o_pad));
      b->args.push_back(std::move(a));
      b->streams.emplace_back(eng);
    }
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
    if (split_) {
      // each direction on its own thread, each primitive single-threaded (created so)
      std::exception_ptr failed[2];
      parallel_slots(
          2,
          [&](int id, int cnt) {
            for (int p = id; p < 2; p += cnt) {
              try {
                parts_[p].prim.execute(bd->streams[p], bd->args[p]);
                bd->streams[p].wait();
              } catch (...) {
                failed[p] = std::current_exception();
              }
            }
          },
          /*runs_primitives=*/true);
      for (auto& f : failed)
        if (f) std::rethrow_exception(f);
    } else {
      // The primitive's input projection shares the recurrence's thread count: it cannot be
      // split off, and the steps dominate (a text model's 128 steps against one projection).
      with_threads(threads_, [&] { parts_[0].prim.execute(*ctx.stream, bd->args[0]); });
    }
    from_ldnc(o_hn_, out[1].data);
    if (s_.cell == Cell::lstm) from_ldnc(o_cn_, out[2].data);
    if (D == 2) {
      const char* y2 = sc + o_y_;
      char* y = static_cast<char*>(out[0].data);
      if (split_) {
        // per direction [batch, seq, hidden] -> [batch, 2, seq, hidden]
        const size_t block = static_cast<size_t>(L) * row;
        for (int64_t b = 0; b < N; ++b)
          for (int64_t d = 0; d < 2; ++d) std::memcpy(y + (b * 2 + d) * block, y2 + (d * N + b) * block, block);
      } else {
        // ntc [batch, seq, 2*hidden] -> [batch, 2, seq, hidden]
        for (int64_t b = 0; b < N; ++b)
          for (int64_t t = 0; t < L; ++t)
            for (int64_t d = 0; d < 2; ++d)
              std::memcpy(y + ((b * 2 + d) * L + t) * row, y2 + ((b * L + t) * 2 + d) * row, row);
      }
    }
  }

 private:
  dnnl::primitive_desc_base make_pd(Part& part, dnnl::rnn_direction dir, int64_t I, int64_t H, int64_t G) {
    const dnnl::memory::desc none;
    const auto w_any = dnnl::memory::desc({1, part.dirs, I, G, H}, dt::f32, tag::any);
    const auto r_any = dnnl::memory::desc({1, part.dirs, H, G, H}, dt::f32, tag::any);
    const auto b_md = dnnl::memory::desc({1, part.dirs, s_.bias_gates, H}, dt::f32, tag::ldgo);
    const auto fwd = dnnl::prop_kind::forward_inference;
    auto& eng = cpu_engine();
    const auto attr = default_attr();
    const auto& it = part.iter;
    switch (s_.cell) {
      case Cell::rnn: {
        const auto act = s_.acts[0] == Act::relu ? dnnl::algorithm::eltwise_relu
                         : s_.acts[0] == Act::tanh ? dnnl::algorithm::eltwise_tanh
                                                   : dnnl::algorithm::eltwise_logistic;
        dnnl::vanilla_rnn_forward::primitive_desc p(eng, fwd, act, dir, src_layer_, it, w_any, r_any, b_md,
                                                    part.dst_layer, it, attr);
        part.prim = dnnl::vanilla_rnn_forward(p);
        return p;
      }
      case Cell::gru: {
        if (s_.lbr) {
          dnnl::lbr_gru_forward::primitive_desc p(eng, fwd, dir, src_layer_, it, w_any, r_any, b_md, part.dst_layer,
                                                  it, attr);
          part.prim = dnnl::lbr_gru_forward(p);
          return p;
        }
        dnnl::gru_forward::primitive_desc p(eng, fwd, dir, src_layer_, it, w_any, r_any, b_md, part.dst_layer, it,
                                            attr);
        part.prim = dnnl::gru_forward(p);
        return p;
      }
      case Cell::lstm: break;
    }
    dnnl::lstm_forward::primitive_desc p(eng, fwd, dir, src_layer_, it, it, w_any, r_any, none, none, b_md,
                                         part.dst_layer, it, it, attr);
    part.prim = dnnl::lstm_forward(p);
    return p;
  }

  RnnSpec s_;
  std::unique_ptr<Kernel> fallback_;
  bool split_ = false;
  int threads_ = 1;
  dnnl::memory::desc src_layer_;
  std::vector<Part> parts_;
  std::string impl_;
  size_t o_h0_ = 0, o_c0_ = 0, o_hn_ = 0, o_cn_ = 0, o_y_ = 0, o_len_ = 0, scratch_ = 0;
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
