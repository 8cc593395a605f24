#include "core/nn.hpp"

#include "core/attn_split.hpp"
#include "core/chunk_pool.hpp"
#include "core/conv_pixel_split.hpp"
#include "core/conv_row_split.hpp"
#include "core/dw_conv_plan.hpp"
#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/fully_connected.hpp"
#include "core/host_isa.hpp"
#include "core/matmul_row_split.hpp"
#include "core/primitive_log.hpp"
#include "core/softmax_rows.hpp"
#include "core/swish_pass.hpp"
#include "core/threading.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace opforge_cpu {

void window_pads(const NodeDesc& n, const Shape& in, const Shape& out, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                 std::vector<int64_t>& pb, std::vector<int64_t>& pe) {
  const size_t sp = kernel.size();
  std::string ap = n.attrs.s("auto_pad", "explicit");
  pb = n.attrs.ints("pads_begin", std::vector<int64_t>(sp, 0));
  pe = n.attrs.ints("pads_end", std::vector<int64_t>(sp, 0));
  pb.resize(sp, 0);
  pe.resize(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    int64_t ext = (kernel[i] - 1) * dilations[i] + 1;
    int64_t in_sz = in[2 + i], out_sz = out[2 + i];
    if (ap == "same_upper" || ap == "same_lower") {
      int64_t total = std::max<int64_t>((out_sz - 1) * strides[i] + ext - in_sz, 0);
      int64_t small = total / 2;
      pb[i] = ap == "same_upper" ? small : total - small;
      pe[i] = total - pb[i];
    } else if (ap == "valid") {
      pb[i] = pe[i] = 0;
    }
    // oneDNN wants the right padding that gives exactly the requested output size (ceil
    // rounding of pooling, explicit pads that floor away a remainder).
    pe[i] = (out_sz - 1) * strides[i] + ext - in_sz - pb[i];
  }
}

std::string check_conv(const NodeDesc& n) {
  if (n.inputs.size() < 2) return "needs data and weights";
  if (n.in(0).dtype != DType::f32 || n.in(1).dtype != DType::f32) return "the CPU device runs convolutions in f32 only";
  int r = static_cast<int>(n.in(0).shape.size());
  if (r < 3 || r > 5) return "convolution of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  return "";
}

namespace {

dnnl::memory::format_tag plain_tag(int rank) {
  using t = dnnl::memory::format_tag;
  switch (rank) {
    case 1: return t::a;
    case 2: return t::ab;
    case 3: return t::abc;
    case 4: return t::abcd;
    case 5: return t::abcde;
    case 6: return t::abcdef;
    default: throw CompileFailure("rank " + std::to_string(rank) + " is not supported here");
  }
}

struct ConvBound : Bound {
  std::unordered_map<int, dnnl::memory> args;
  std::unordered_map<int, dnnl::memory> reorder_args;
  std::unordered_map<int, dnnl::memory> wei_reorder_args;
  std::unordered_map<int, dnnl::memory> exact_args;  // see WindowKernel::add_exact
  ChunkSplitArgs split;                              // see WindowKernel::split_
  AttnSplitArgs attn;                                // see WindowKernel::attn_
  ChunkSplitArgs rows;                               // see WindowKernel::rows_
  std::unique_ptr<Bound> qk;                         // see WindowKernel::fused_qk_
};

// What WindowKernel::propagate_nan needs of an element type: NaN, +inf and lowest() as values
// of it, and a fast screen of a chunk for NaN.
template <class T> struct NanScan;
template <> struct NanScan<float> {
  static constexpr float inf = std::numeric_limits<float>::infinity();
  static constexpr float lowest = std::numeric_limits<float>::lowest();
  static constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  static bool is_nan(float v) { return v != v; }
  // A screen first: v - v is NaN exactly for NaN and +-inf, and a plain float sum of it is a
  // vector subtract-and-add (an int |-reduction of x != x under `omp parallel for simd ... if`
  // stayed scalar: 0.44 ms for resnet18's 64x112x112 input, 9x the pooling itself (0.05);
  // the screen takes 0.16). Only a flagged chunk (an inf is fine) gets the exact test.
  static bool any_nan(const float* x, int64_t n) {
    float screen = 0.0f;
#pragma omp simd reduction(+ : screen)
    for (int64_t i = 0; i < n; ++i) screen += x[i] - x[i];
    if (screen == screen) return false;
    for (int64_t i = 0; i < n; ++i)
      if (x[i] != x[i]) return true;
    return false;
  }
};
// bf16 as its bit pattern: NaN is exactly |bits| > 0x7f80, so the screen is a vector max of the
// 15 magnitude bits.
template <> struct NanScan<uint16_t> {
  static constexpr uint16_t inf = 0x7f80, lowest = 0xff7f, nan = 0x7fc0;
  static bool is_nan(uint16_t v) { return (v & 0x7fff) > inf; }
  static bool any_nan(const uint16_t* x, int64_t n) {
    int16_t top = 0;
#pragma omp simd reduction(max : top)
    for (int64_t i = 0; i < n; ++i) top = std::max<int16_t>(top, static_cast<int16_t>(x[i] & 0x7fff));
    return top > 0x7f80;
  }
};

// A convolution-like primitive (conv, deconv, pooling) plus an optional reorder of a plain
// source into the layout the primitive prefers, done in the kernel's scratch memory.
class WindowKernel : public Kernel {
 public:
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override {
    auto* b = static_cast<ConvBound*>(bound);
    if (fused_qk_ && (ctx.num_threads <= 1 || !attn_)) {
      // (not at the thread count it was fused for: Q x K^T's own step first, then this one)
      fused_qk_->run(ctx, in + fused_inputs_, const_cast<TensorView*>(in), b->qk.get());
      ctx.stream->wait();
    }
    if (attn_ && ctx.num_threads > 1) {
      // attention's MatMul as chunks that convert their own operands (attn_split.cpp)
      AttnSoftmax sm;
      if (softmax_len_) {
        sm.scores = static_cast<const float*>(b->reorder_args.at(DNNL_ARG_FROM).get_data_handle());
        sm.add = softmax_add_input_ >= 0 ? in[softmax_add_input_].ptr<float>() : nullptr;
        sm.add_rows = softmax_add_rows_;
      }
      if (fused_qk_) {
        // a fused attention: Q x K^T's chunk, then this chunk, in one region (attn_split.cpp)
        auto* qb = static_cast<ConvBound*>(b->qk.get());
        run_attn_fused(*fused_qk_->attn_, qb->attn, *attn_, b->attn, sm, ctx.num_threads);
        return;
      }
      run_attn_split(*attn_, b->attn, sm, ctx.num_threads);
      return;
    }
    if (softmax_len_) softmax_source(ctx, in, b);
    else if (has_src_reorder_) src_reorder_.execute(*ctx.stream, b->reorder_args);
    if (has_wei_reorder_) wei_reorder_.execute(*ctx.stream, b->wei_reorder_args);
    if (has_exact_ && !finite_bf16(ctx, b->args.at(DNNL_ARG_SRC))) {
      exact_prim_.execute(*ctx.stream, b->exact_args);
      return;
    }
    if (dw_) {
      // our depthwise kernel (dw_conv_bf16.cpp, dw_conv_f32.cpp) over the primitive's source and
      // destination
      ctx.stream->wait();  // (the source's reorder is done)
      dw_->run(b->args.at(DNNL_ARG_SRC).get_data_handle(), b->args.at(DNNL_ARG_DST).get_data_handle(),
               ctx.num_threads);
      return;
    }
    if (rows_ && ctx.num_threads > 1) {
      ctx.stream->wait();  // (the source's reorder is done)
      run_chunk_split(*rows_, b->rows, ctx.num_threads);
      return;
    }
    if (split_ && ctx.num_threads > 1) {
      ctx.stream->wait();  // (the source's reorder is done)
      run_chunk_split(*split_, b->split, ctx.num_threads);
      return;
    }
    prim_.execute(*ctx.stream, b->args);
    if (swish_pass_) {
      // the Swish the primitive was built without (see swish_pass.cpp), over its whole
      // destination: a blocked layout's zero channel padding stays zero (0 / (1 + 1))
      ctx.stream->wait();
      swish_inplace(static_cast<float*>(b->args.at(DNNL_ARG_DST).get_data_handle()),
                    static_cast<int64_t>(dst_md_.get_size() / sizeof(float)), swish_alpha_, ctx.num_threads);
    }
    if (nan_max_) propagate_nan(ctx, b->args);
  }

  // Whether a bf16 source holds only finite values (see regroup_bf16): inf and NaN are exactly
  // the patterns with |bits| >= 0x7f80, so one vector max of the 15 magnitude bits.
  bool finite_bf16(RunContext& ctx, const dnnl::memory& src) const {
    ctx.stream->wait();
    const uint16_t* x = static_cast<const uint16_t*>(src.get_data_handle());
    const int64_t nx = static_cast<int64_t>(src_md_.get_size() / sizeof(uint16_t));
    std::atomic<int> bad{0};
    parallel_range(nx, ctx.num_threads, [&](int64_t b, int64_t e) {
      int16_t top = 0;
#pragma omp simd reduction(max : top)
      for (int64_t i = b; i < e; ++i) top = std::max<int16_t>(top, static_cast<int16_t>(x[i] & 0x7fff));
      if (top >= 0x7f80) bad = 1;
    }, 65536);
    return !bad;
  }

  // The exact twin of a regrouped convolution: same source and destination, its own weights and
  // scratchpad (which shares the kernel's scratch with the main primitive's).
  void add_exact(const dnnl::convolution_forward::primitive_desc& pd, dnnl::memory weights) {
    has_exact_ = true;
    exact_prim_ = dnnl::convolution_forward(pd);
    note_primitive(pd);
    exact_weights_ = std::move(weights);
    exact_scratch_md_ = pd.scratchpad_desc();
    // (bind places the source's reorder buffer after prim_scratch_ bytes: room for either)
    prim_scratch_ = std::max(prim_scratch_, (exact_scratch_md_.get_size() + 63) / 64 * 64);
  }

  // A bf16 MatMul that folds the Softmax of its source (attention's P x V, attribute softmax_a):
  // the softmax of the f32 scores' rows is written as bf16 straight into the source buffer, in
  // place of the f32 -> bf16 conversion of a softmax result (one pass over P instead of three);
  // with the Add before the Softmax folded too (input softmax_add_input_: a mask or position bias
  // that the bf16 Q x K^T cannot take as a post-op), the scores plus its rows.
  void softmax_source(RunContext& ctx, const TensorView* in, ConvBound* b) const {
    const float* x = static_cast<const float*>(b->reorder_args.at(DNNL_ARG_FROM).get_data_handle());
    uint16_t* y = static_cast<uint16_t*>(b->reorder_args.at(DNNL_ARG_TO).get_data_handle());
    const float* add = softmax_add_input_ >= 0 ? in[softmax_add_input_].ptr<float>() : nullptr;
    const int64_t len = softmax_len_, rows = softmax_rows_, add_rows = softmax_add_rows_;
    // ~20 flops an element (the exp): threads from 8192 elements on, as the Softmax kernel
    parallel_range(rows, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      softmax_rows_bf16(x, add, add_rows, y, r0, r1, len);
    }, std::max<int64_t>(1, 8192 / len));
  }

  // oneDNN's pooling_max skips a NaN inside a window; ONNX (and ReduceMax here) give NaN. Only
  // when the source holds a NaN (a scan of it, the rare case costs one more pooling): pool a
  // copy where NaN is +inf and +inf is lowest(), so exactly the windows with a NaN come out
  // +inf, and make those outputs NaN. Works on the primitive's own (possibly blocked) layout,
  // f32 or bf16 (bf16 programs pool bf16 into bf16: the same on the bit patterns, NanScan).
  void propagate_nan(RunContext& ctx, const std::unordered_map<int, dnnl::memory>& args) const {
    ctx.stream->wait();
    if (src_md_.get_data_type() == dnnl::memory::data_type::bf16) propagate_nan_as<uint16_t>(ctx, args);
    else propagate_nan_as<float>(ctx, args);
  }
  template <class T> void propagate_nan_as(RunContext& ctx, const std::unordered_map<int, dnnl::memory>& args) const {
    using S = NanScan<T>;
    const T* x = static_cast<const T*>(args.at(DNNL_ARG_SRC).get_data_handle());
    const int64_t nx = static_cast<int64_t>(src_md_.get_size() / sizeof(T));
    std::atomic<int> any{0};
    parallel_range(nx, ctx.num_threads, [&](int64_t b, int64_t e) {
      if (S::any_nan(x + b, e - b)) any = 1;
    }, 65536);
    if (!any) return;
    std::vector<T> xm(nx), ym(dst_md_.get_size() / sizeof(T));
    for (int64_t i = 0; i < nx; ++i) xm[i] = S::is_nan(x[i]) ? S::inf : (x[i] == S::inf ? S::lowest : x[i]);
    auto& eng = cpu_engine();
    std::unordered_map<int, dnnl::memory> marked(args);
    marked[DNNL_ARG_SRC] = dnnl::memory(src_md_, eng, xm.data());
    marked[DNNL_ARG_DST] = dnnl::memory(dst_md_, eng, ym.data());
    prim_.execute(*ctx.stream, marked);
    ctx.stream->wait();
    T* y = static_cast<T*>(args.at(DNNL_ARG_DST).get_data_handle());
    for (size_t i = 0; i < ym.size(); ++i)
      if (ym[i] == S::inf) y[i] = S::nan;
  }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t, void* scratch) override {
    // a picked operand (MatMul pick_a/pick_b) starts in_offset_ bytes into its stored tensor:
    // every use of its pointer below (memory objects, the attention chunks' own conversion)
    // takes the shifted one
    std::vector<TensorView> shifted;
    if (!in_offset_.empty()) {
      shifted.assign(in, in + n_in);
      for (size_t i = 0; i < std::min(n_in, in_offset_.size()); ++i)
        if (in_offset_[i]) shifted[i].data = static_cast<char*>(shifted[i].data) + in_offset_[i];
      in = shifted.data();
    }
    auto b = std::make_unique<ConvBound>();
    auto& eng = cpu_engine();
    char* s = static_cast<char*>(scratch);
    if (has_src_reorder_) {
      dnnl::memory user(src_user_md_, eng, in[0].data);
      dnnl::memory inner(src_md_, eng, s + prim_scratch_);
      b->reorder_args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, inner}};
      b->args.emplace(DNNL_ARG_SRC, inner);
    } else {
      b->args.emplace(DNNL_ARG_SRC, dnnl::memory(src_md_, eng, in[0].data));
    }
    b->args.emplace(DNNL_ARG_DST, dnnl::memory(dst_md_, eng, out[0].data));
    if (weights_input_ >= 0 && has_wei_reorder_) {
      // run-time weights in another type (a bf16 MatMul of two activations): converted into
      // scratch before each run, after the source's copy
      dnnl::memory user(wei_user_md_, eng, in[weights_input_].data);
      dnnl::memory inner(weights_md_, eng, s + prim_scratch_ + src_bytes_ + workspace_bytes_);
      b->wei_reorder_args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, inner}};
      b->args.emplace(DNNL_ARG_WEIGHTS, inner);
    } else if (weights_input_ >= 0)
      b->args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(weights_md_, eng, in[weights_input_].data));
    else if (weights_)
      b->args.emplace(DNNL_ARG_WEIGHTS, weights_);
    if (bias_input_ >= 0) b->args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md_, eng, in[bias_input_].data));
    else if (bias_) b->args.emplace(DNNL_ARG_BIAS, bias_);
    if (prim_scratch_) b->args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md_, eng, s));
    if (residual_input_ >= 0)
      b->args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_post_op_) | DNNL_ARG_SRC_1,
                      dnnl::memory(residual_md_, eng, in[residual_input_].data));
    if (workspace_bytes_) {
      b->args.emplace(DNNL_ARG_WORKSPACE, dnnl::memory(workspace_md_, eng, s + prim_scratch_ + src_bytes_));
    }
    if (has_exact_) {
      b->exact_args = b->args;
      b->exact_args[DNNL_ARG_WEIGHTS] = exact_weights_;
      b->exact_args.erase(DNNL_ARG_SCRATCHPAD);
      if (exact_scratch_md_.get_size()) b->exact_args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(exact_scratch_md_, eng, s));
    }
    if (split_) {
      const int res = residual_input_ >= 0 ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_post_op_) | DNNL_ARG_SRC_1) : 0;
      b->split = bind_chunk_split(*split_, b->args, res, s);  // (slot scratch: the primitive's, see use_split)
    }
    if (rows_) {
      const int res = residual_input_ >= 0 ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_post_op_) | DNNL_ARG_SRC_1) : 0;
      b->rows = bind_chunk_split(*rows_, b->args, res, s);  // (slot scratch: the primitive's, see use_rows)
    }
    if (attn_)
      b->attn = bind_attn_split(*attn_, b->args, has_src_reorder_ && !softmax_len_ ? in[0].data : nullptr,
                                has_wei_reorder_ ? in[weights_input_].data : nullptr, s);
    if (fused_qk_) {
      // Q x K^T's inputs follow this step's own (executor.cpp appends them), its output is this
      // step's scores input; its scratch follows this kernel's, as both run in one region
      b->qk = fused_qk_->bind(in + fused_inputs_, n_in - static_cast<size_t>(fused_inputs_), in, 1,
                              s + own_scratch_bytes());
    }
    return b;
  }
  size_t own_scratch_bytes() const { return (prim_scratch_ + src_bytes_ + workspace_bytes_ + wei_bytes_ + 64 + 63) / 64 * 64; }
  size_t scratch_bytes() const override {
    return own_scratch_bytes() + (fused_qk_ ? fused_qk_->scratch_bytes() : 0);
  }
  int required_inplace_input(int out) const override { return out == 0 ? sum_input_ : -1; }
  std::string impl_name() const override { return impl_; }

  // Called by builders once the primitive descriptor exists.
  void finish(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, const dnnl::memory::desc& user_src) {
    prim_ = p;
    scratch_md_ = pd.scratchpad_desc();
    prim_scratch_ = (scratch_md_.get_size() + 63) / 64 * 64;
    src_md_ = pd.query_md(dnnl::query::src_md);
    dst_md_ = pd.query_md(dnnl::query::dst_md);
    src_user_md_ = user_src;
    if (src_md_ != user_src) {
      has_src_reorder_ = true;
      src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user_src, cpu_engine(), src_md_));
      src_bytes_ = (src_md_.get_size() + 63) / 64 * 64;
    }
    const char* info = pd.impl_info_str();
    impl_ = info ? info : "onednn";
    note_primitive(pd);
  }

  dnnl::primitive prim_;
  std::vector<size_t> in_offset_;  // bytes into input i where its operand starts (a picked one)
  dnnl::reorder src_reorder_;
  bool has_src_reorder_ = false;
  dnnl::reorder wei_reorder_;
  bool has_wei_reorder_ = false;
  dnnl::memory::desc wei_user_md_;
  size_t wei_bytes_ = 0;
  // Weights read at run time in `user` layout/type, converted into scratch for the primitive.
  void convert_weights(const dnnl::memory::desc& user, const dnnl::memory::desc& want) {
    weights_md_ = want;
    wei_user_md_ = user;
    has_wei_reorder_ = true;
    wei_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user, cpu_engine(), want));
    wei_bytes_ = (want.get_size() + 63) / 64 * 64;
  }
  // A 1x1 bf16 convolution at 2+ threads as pixel chunks that the threads claim
  // (conv_pixel_split.cpp), a bf16 MatMul with constant weights as row chunks
  // (matmul_row_split.cpp); its slots' scratchpads take the primitive's scratch region, which
  // the unsplit primitive never uses at the same time.
  std::optional<ChunkSplit> split_;
  void use_split(ChunkSplit split, const char* what = "+pixels") {
    prim_scratch_ = std::max(prim_scratch_, static_cast<size_t>(split.threads) * split.slot_scratch);
    impl_ += what + std::to_string(split.chunks.size());
    split_ = std::move(split);
  }
  // A bf16 MatMul of two run-time operands (attention) at 2+ threads as (batches, row block)
  // chunks (attn_split.cpp); its slots' scratchpads and buffers take the primitive's scratch
  // region too.
  std::optional<AttnSplit> attn_;
  // A bf16 convolution (3x3, grouped) at 2+ threads as output-row chunks when OPFORGE_CPU_CONV_ROWS
  // asks for them (conv_row_split.cpp); its slots' scratchpads take the primitive's scratch region.
  std::optional<ChunkSplit> rows_;
  // A bf16 or f32 depthwise convolution run by our own kernel (dw_conv_plan.cpp) instead of prim_.
  std::unique_ptr<DwConvKernel> dw_;
  void use_rows(ChunkSplit split) {
    prim_scratch_ = std::max(prim_scratch_, static_cast<size_t>(split.threads) * split.slot_scratch);
    impl_ += "+rows" + std::to_string(split.chunks.size());
    rows_ = std::move(split);
  }
  // What the split was planned from (a fused attention re-plans Q x K^T's chunks: fuse_attention).
  std::optional<dnnl::matmul::primitive_desc> attn_pd_;
  AttnSplitOperands attn_ops_;
  // A fused attention (fuse_attention): this P x V step runs Q x K^T's kernel too, whose inputs
  // are this step's from fused_inputs_ on.
  std::unique_ptr<WindowKernel> fused_qk_;
  int fused_inputs_ = 0;
  void use_attn_split(AttnSplit split) {  // (slot scratchpads, then slot buffers: attn_split.hpp)
    prim_scratch_ = std::max(prim_scratch_, static_cast<size_t>(split.threads) *
                                                (split.slot_scratch + split.slot_bytes()));
    impl_ += "+attn" + std::to_string(split.chunks.size());
    attn_ = std::move(split);
  }
  // an f32 1x1 convolution whose trailing Swish (alpha swish_alpha_) runs as our pass after the
  // primitive instead of as its post-op (conv_swish_pass_on_this_host)
  bool swish_pass_ = false;
  float swish_alpha_ = 1.f;
  bool nan_max_ = false;  // a max pooling: see propagate_nan
  bool has_exact_ = false;  // a regrouped convolution (regroup_bf16) and its exact twin
  dnnl::primitive exact_prim_;
  dnnl::memory exact_weights_;
  dnnl::memory::desc exact_scratch_md_;
  int64_t softmax_len_ = 0, softmax_rows_ = 0;  // a folded Softmax of the source: see softmax_source
  int softmax_add_input_ = -1;
  int64_t softmax_add_rows_ = 1;
  dnnl::memory::desc src_md_, src_user_md_, dst_md_, weights_md_, bias_md_, scratch_md_, workspace_md_;
  dnnl::memory weights_;
  dnnl::memory bias_;  // a constant bias converted at compile time (bf16 depthwise)
  int weights_input_ = -1, bias_input_ = -1, sum_input_ = -1;
  // a residual read as a binary add post-op (not in place: its type differs from the destination's)
  // (or a broadcast operand: attention's mask after a bf16 MatMul), post-op number residual_post_op_
  int residual_input_ = -1, residual_post_op_ = 0;
  dnnl::memory::desc residual_md_;
  bool weights_packed_ = false;
  bool packs_input(int i) const override { return i == 1 && weights_packed_; }
  size_t prim_scratch_ = 0, src_bytes_ = 0, workspace_bytes_ = 0;
  std::string impl_;
};

// oneDNN's reference implementations ("ref:any", "ref_int8"...) are the fallback it finds when
// no optimised kernel fits; for a bf16 request that means a host without bf16 support.
bool is_reference_impl(const dnnl::primitive_desc_base& pd) {
  const char* info = pd.impl_info_str();
  return info == nullptr || std::string(info).rfind("ref", 0) == 0;
}

// Whether oneDNN runs an ordinary f32 convolution (64 -> 64 channels, 3x3, 56x56) channels-last
// on this host (brgconv on AVX-512; AVX2 hosts block channels by 8): asked once.
bool host_convs_nhwc() {
  static const bool nhwc = [] {
    try {
      dnnl::memory::dims x{1, 64, 56, 56}, w{64, 64, 3, 3};
      auto any = dnnl::memory::format_tag::any;
      dnnl::convolution_forward::primitive_desc pd(
          cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          dnnl::memory::desc(x, dnnl::memory::data_type::f32, any), dnnl::memory::desc(w, dnnl::memory::data_type::f32, any),
          dnnl::memory::desc(x, dnnl::memory::data_type::f32, any), {1, 1}, {0, 0}, {1, 1}, {1, 1}, default_attr());
      return pd.dst_desc() == dnnl::memory::desc(x, dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return nhwc;
}

// Host rule (stop 20): a grouped convolution of 4 or 8 channels a group (ResNeXt's
// layers 1 and 2) whose source arrives nhwc runs oneDNN's JIT kernel on nhwc too, in f32 and bf16.
// oneDNN 3.2 picks nChw4c / nChw8c for `any`; that kernel alone is faster than on nhwc, but it
// costs a reorder of the nhwc source into the kernel's scratch and a reorder of its blocked
// destination back to nhwc inside the next 1x1 convolution. Counting those, nhwc wins (Zen 5 VM,
// one convolution with its two reorders against nhwc, median us, 1 thread (2 threads)): f32
// 128 ch 56x56 groups of 4: 680 (356) vs 546 (280), 256 ch 56 -> 28 groups of 8: 388 (213) vs 391
// (204); bf16 the same two 445 (236) vs 313 (158), 230 (137) vs 167 (92); kernel-library.md
// "ResNeXt's small groups over nhwc"). Since stop 28 AMX hosts take it too in f32 (f32 has no
// AMX kernel, so the same AVX-512 JIT kernel as above runs; Emerald Rapids, resnext50_32x4d,
// on / off: see kernel-library.md); bf16 there merges these groups instead (regroup_bf16) and
// keeps oneDNN's layout (grouped_bf16_nhwc_on_this_host). OPFORGE_CPU_GROUPED_SMALL_NHWC=0:
// oneDNN's choice.
bool grouped_small_nhwc_on_this_host() {
  static const bool on = env_switch_on("OPFORGE_CPU_GROUPED_SMALL_NHWC");
  return on;
}

// Grouped weights [G, O/G, I/G, kh, kw] that may run channels-last over an nhwc source: 16k
// channels a group (every host), or 4 or 8 in and out (the rule above; only those were measured).
bool grouped_nhwc_width(const Shape& ws) {
  if (ws.size() != 5) return false;
  if (ws[1] % 16 == 0 && ws[2] % 16 == 0) return true;
  return ws[1] == ws[2] && (ws[1] == 4 || ws[1] == 8) && grouped_small_nhwc_on_this_host();
}

// See make_dnnl_conv: a 2D f32 convolution given a channel-blocked destination, of a plain source,
// or (grouped, 16k channels a group, or 4 / 8) of a source its producer wrote
// channels-last.
bool prefer_nhwc(const dnnl::convolution_forward::primitive_desc& pd, const NodeDesc& n, bool grouped,
                 int sum_input, const Shape& xs) {
  if (sum_input >= 0 || xs.size() != 4 || pd.dst_desc().get_inner_nblks() == 0) return false;
  if (grouped) {
    const Shape& ws = n.in(1).shape;  // [G, O/G, I/G, kh, kw]
    const auto nhwc = dnnl::memory::desc(to_dims(xs), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
    if (!grouped_nhwc_width(ws) || !n.in(0).blocked || md_of(n.in(0)) != nhwc) return false;
  } else if (n.in(0).blocked) {
    return false;
  }
  return host_convs_nhwc();
}

// A grouped bf16 convolution with few channels a group (ResNeXt's 32 groups of 4, 8 and 16)
// run as fewer, wider groups: m neighbouring groups merged into one whose weights are
// block-diagonal (zero between the original groups). oneDNN 3.2 has no AMX kernel below 16
// channels a group and runs jit_bf16 there, ~8x slower than its brgconv at 32 channels a group
// doing m times the multiply-adds (one thread on AMX, 3x3: 128 ch 56x56, 32 groups 1.23 ->
// 0.14 ms; 256 ch 28x28 0.55 -> 0.065; 512 ch 14x14, already brgconv at 16 a group, 0.049 ->
// 0.035). For finite inputs the zero products change nothing (f32 sums of exact zeros); an inf
// or NaN would spill into the other groups of its merged group (0 * inf = NaN), so the kernel
// screens its source and runs the exact grouped primitive (`exact`) when one is there.
struct Regrouped {
  dnnl::convolution_forward::primitive_desc pd;     // the merged groups (brgconv)
  dnnl::convolution_forward::primitive_desc exact;  // the original groups, same source/destination layouts
  dnnl::memory::desc plain;                         // the merged weights' plain f32 layout
  std::vector<float> weights;                       // the merged weights, block-diagonal, plain
};

// How many groups to merge: the smallest m (2, 4 or 8) dividing the groups that gives >= 32
// channels a group, else the largest that gives >= 16; 0 for none.
int64_t regroup_factor(int64_t groups, int64_t cpg) {
  int64_t best16 = 0;
  for (int64_t m : {2, 4, 8}) {
    if (groups % m != 0) continue;
    if (cpg * m >= 32) return m;
    if (cpg * m >= 16) best16 = m;
  }
  return best16;
}

template <class Make>
std::optional<Regrouped> regroup_bf16(const Shape& xs, const Shape& ws, const Shape& ys, const void* w_data,
                                      dnnl::memory::data_type dst_type, Make&& mk) {
  // grouped weights [G, O/G, I/G, k...]
  if (w_data == nullptr || ws.size() != xs.size() + 1) return std::nullopt;
  const int64_t groups = ws[0], ocg = ws[1], icg = ws[2];
  if (groups < 2 || std::min(ocg, icg) < 2 || std::max(ocg, icg) >= 32) return std::nullopt;
  const int64_t m = regroup_factor(groups, std::min(ocg, icg));
  if (m == 0) return std::nullopt;
  int64_t taps = 1;
  for (size_t i = 3; i < ws.size(); ++i) taps *= ws[i];
  Shape merged = ws;
  merged[0] = groups / m;
  merged[1] = ocg * m;
  merged[2] = icg * m;
  using dt = dnnl::memory::data_type;
  const auto any = dnnl::memory::format_tag::any;
  try {
    auto pd = mk(any_md(DType::bf16, xs), dnnl::memory::desc(to_dims(merged), dt::bf16, any),
                 dnnl::memory::desc(to_dims(ys), dst_type, any));
    const char* info = pd.impl_info_str();
    if (info == nullptr || std::string(info).rfind("brg", 0) != 0) return std::nullopt;
    auto exact = mk(pd.src_desc(), dnnl::memory::desc(to_dims(ws), dt::bf16, any), pd.dst_desc());
    if (is_reference_impl(exact)) return std::nullopt;
    Regrouped r{pd, exact, dnnl::memory::desc(to_dims(merged), dt::f32, plain_tag(static_cast<int>(merged.size()))),
                std::vector<float>(static_cast<size_t>(merged[0] * merged[1] * merged[2] * taps), 0.0f)};
    const float* w = static_cast<const float*>(w_data);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t big = g / m, j = g % m;
      for (int64_t o = 0; o < ocg; ++o)
        for (int64_t i = 0; i < icg; ++i) {
          const float* from = w + ((g * ocg + o) * icg + i) * taps;
          float* to = r.weights.data() + ((big * merged[1] + j * ocg + o) * merged[2] + j * icg + i) * taps;
          std::copy(from, from + taps, to);
        }
    }
    return r;
  } catch (const dnnl::error&) {
    return std::nullopt;  // no such kernel: the original groups
  }
}

// Host rule (stop 19) for regroup_bf16: it was measured and adopted on AMX hosts, where oneDNN 3.2
// has no AMX kernel below 32 channels a group. Without AMX (AVX512_BF16 only: the AMD Zen 5 VM)
// the merged groups run avx512_core_bf16 brgconv, which does m times the multiply-adds at no
// higher rate than jit_bf16 on the original groups: one thread, 3x3, merged / original 798 / 288 us
// (128 ch 56x56, 32 groups of 4, m = 8), 730 / 267 (256 ch 56 -> 28, groups of 8, m = 4),
// 74 / 39 (320 ch 14x14, groups of 16, m = 2), 235 / 149 (64 ch 112 -> 56, groups of 16)
// (kernel-library.md, "Grouped bf16 convolutions without AMX"). So without AMX the original
// groups run as they are. OPFORGE_CPU_REGROUP_HOST_RULE=0: regroup on every host, as before
// (the test suite sets it, so that regroup_bf16's tests run on hosts without AMX too).
bool regroup_on_this_host() {
  static const bool on = host_has_amx() || !env_switch_on("OPFORGE_CPU_REGROUP_HOST_RULE");
  return on;
}

// Without AMX, a bf16 grouped convolution of 16k channels a group (RegNet's groups of 16) whose
// source its producer wrote channels-last runs oneDNN's jit_bf16 on nhwc instead of the nChw16c
// it picks for `any` (see make_dnnl_conv). OPFORGE_CPU_GROUPED_BF16_NHWC=0: oneDNN's choice.
bool grouped_bf16_nhwc_on_this_host() {
  static const bool on = !host_has_amx() && env_switch_on("OPFORGE_CPU_GROUPED_BF16_NHWC");
  return on;
}

// Whether the rule above applies: a 2D grouped (not depthwise) convolution of 16k channels a
// group (or 4 / 8, grouped_small_nhwc_on_this_host), given a channel-blocked destination, whose
// source is a dense nhwc tensor (any type).
bool grouped_bf16_wants_nhwc(const dnnl::convolution_forward::primitive_desc& pd, const NodeDesc& n,
                             const Shape& xs) {
  const Shape& ws = n.in(1).shape;  // [G, O/G, I/G, kh, kw]
  if (xs.size() != 4 || !grouped_nhwc_width(ws)) return false;
  if (pd.dst_desc().get_inner_nblks() == 0 || !n.in(0).blocked) return false;
  const dnnl::memory::desc src = md_of(n.in(0));
  return src == dnnl::memory::desc(to_dims(xs), src.get_data_type(), dnnl::memory::format_tag::acdb);
}

// Without AMX, a bf16 convolution of a plain source (the stem) that oneDNN gives a channel-blocked
// destination asks for the same kernel on nhwc (see make_dnnl_conv), on a host whose ordinary
// convolutions run channels-last. AMX hosts keep oneDNN's choice (their stem is
// jit:avx512_core_amx, kernel-library.md "The stem in bf16"). OPFORGE_CPU_STEM_BF16_NHWC=0: oneDNN's
// choice everywhere.
bool stem_bf16_nhwc_on_this_host() {
  static const bool on = !host_has_amx() && env_switch_on("OPFORGE_CPU_STEM_BF16_NHWC");
  return on;
}

bool stem_bf16_wants_nhwc(const dnnl::convolution_forward::primitive_desc& pd, const NodeDesc& n, const Shape& xs) {
  return xs.size() == 4 && !n.in(0).blocked && pd.dst_desc().get_inner_nblks() != 0 && host_convs_nhwc();
}

}  // namespace

dnnl::memory::desc any_md(DType t, const Shape& s) {
  return dnnl::memory::desc(to_dims(s), dnnl_type(t), dnnl::memory::format_tag::any);
}

ConvGeometry conv_geometry(const NodeDesc& n) {
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const int sp = static_cast<int>(xs.size()) - 2;
  std::vector<int64_t> kernel(ws.end() - sp, ws.end());
  auto strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pb, pe;
  window_pads(n, xs, n.outputs[0].shape, kernel, strides, dil, pb, pe);
  ConvGeometry g{to_dims(strides), {}, to_dims(pb), to_dims(pe)};
  for (auto d : dil) g.dilations.push_back(d - 1);
  return g;
}

dnnl::convolution_forward::primitive_desc conv_primitive(const ConvGeometry& g, const dnnl::memory::desc& src,
                                                         const dnnl::memory::desc& weights, const dnnl::memory::desc& bias,
                                                         const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr) {
  const auto fwd = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  if (bias.get_ndims() == 0)
    return dnnl::convolution_forward::primitive_desc(cpu_engine(), fwd, alg, src, weights, dst, g.strides, g.dilations,
                                                     g.pads_begin, g.pads_end, attr);
  return dnnl::convolution_forward::primitive_desc(cpu_engine(), fwd, alg, src, weights, bias, dst, g.strides,
                                                   g.dilations, g.pads_begin, g.pads_end, attr);
}

std::unique_ptr<Kernel> make_dnnl_conv(NodeDesc& n, bool grouped) {
  std::string why = check_conv(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const ConvGeometry geo = conv_geometry(n);

  auto k = std::make_unique<WindowKernel>();
  bool has_bias = n.attrs.b("has_bias", false);
  int sum_input = static_cast<int>(n.attrs.i("sum_input", -1));

  auto user_src = md_of(n.in(0));
  // oneDNN picks the source layout its fastest implementation wants; when that differs from
  // the tensor's (plain input, or another kernel's blocked layout such as nChw16c feeding a
  // depthwise kernel that wants nhwc) the kernel reorders it into scratch first, which is far
  // cheaper than the reference implementation a forced layout would fall back to.
  auto src_md = any_md(DType::f32, xs);
  dnnl::memory::dims wdims = to_dims(ws);
  auto w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  auto w_plain = dnnl::memory::desc(wdims, dnnl::memory::data_type::f32, plain_tag(static_cast<int>(wdims.size())));
  bool w_const = n.is_const(1);
  dnnl::memory::desc bias_md;
  if (has_bias) bias_md = dnnl::memory::desc({ys[1]}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto dst_md = sum_input >= 0 ? md_of(n.in(sum_input)) : any_md(DType::f32, ys);

  dnnl::primitive_attr attr = default_attr();
  dnnl::post_ops ops;
  append_post_ops(ops, n.attrs);
  attr.set_post_ops(ops);
  // (bias_md is read when called: the bf16 path below may switch it to a bf16 one)
  auto mk = [&](const dnnl::memory::desc& s, const dnnl::memory::desc& w, const dnnl::memory::desc& d) {
    return conv_primitive(geo, s, w, bias_md, d, attr);
  };
  dnnl::convolution_forward::primitive_desc pd;
  // INFERENCE_PRECISION_HINT=bf16 (attribute set by the emitter): bf16 source and weights, f32
  // accumulation and bias. The source is converted in the kernel's scratch by the same reorder
  // that changes its layout. The destination is f32, so every other kernel keeps reading f32,
  // except where the emitter found that only bf16 convolutions read it ("bf16_output"): then it
  // is bf16 (half the memory traffic, no conversion in the reader). Only when a fast
  // implementation exists: a reference one would be far slower than f32.
  bool bf16 = false;
  std::optional<Regrouped> regrouped;  // see regroup_bf16
  // The residual (sum_input) is added in place by oneDNN's sum post-op, so the destination takes
  // its type and layout; in a bf16 program a residual stored in bf16 under an f32 destination (or
  // the reverse) is a binary add post-op reading it where it is instead.
  bool residual_binary = false;
  dnnl::memory::desc residual_md;
  if (sum_input >= 0) residual_md = md_of(n.in(sum_input));
  auto residual_attr = [&]() {
    dnnl::primitive_attr a = default_attr();
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_add, residual_md);
    append_fused_ops(po, n.attrs.fused_ops("post_ops"));
    a.set_post_ops(po);
    return a;
  };
  const bool residual_bf16 = sum_input >= 0 && residual_md.get_data_type() == dnnl::memory::data_type::bf16;
  const dnnl::primitive_attr f32_attr = attr;
  if (w_const && n.attrs.b("bf16", false)) {
    bool bf16_dst = n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
    auto conv_dst = bf16_dst ? any_md(DType::bf16, ys) : dst_md;
    if (sum_input >= 0 && residual_bf16 != bf16_dst) {
      residual_binary = true;
      attr = residual_attr();
      conv_dst = bf16_dst ? any_md(DType::bf16, ys) : any_md(DType::f32, ys);
    } else if (sum_input >= 0) {
      conv_dst = residual_md;  // the in-place sum writes over the residual: its exact layout
    }
    auto w_bf16 = dnnl::memory::desc(wdims, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any);
    // A depthwise convolution: oneDNN 3.2's fast bf16 kernel (brdgmm_dw, nhwc) takes a bf16
    // destination only with a bf16 bias; with an f32 one it falls back to jit_dw, ~1.6x slower
    // (0.30 vs 0.19 ms for 144x56x56, one thread on AMX). So a constant bias is rounded to bf16
    // once here (the sum is still f32). A depthwise convolution that gets jit_dw anyway (or a
    // reference kernel) runs in f32: its f32 kernel is faster than jit_dw.
    bool dw = grouped && ws.size() >= 3 && ws[1] == 1 && ws[2] == 1;
    bool bias_bf16 = dw && bf16_dst && has_bias && n.is_const(2);
    auto bias_f32 = bias_md;
    if (bias_bf16) bias_md = dnnl::memory::desc({ys[1]}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::a);
    try {
      pd = mk(any_md(DType::bf16, xs), w_bf16, conv_dst);
      bf16 = !is_reference_impl(pd) && !(dw && std::string(pd.impl_info_str()).rfind("jit_dw", 0) == 0);
    } catch (const dnnl::error&) {
      bf16 = false;
    }
    if (bf16 && grouped && !dw && sum_input < 0 && w_const && regroup_on_this_host())
      regrouped = regroup_bf16(xs, ws, ys, n.inputs[1].const_data, conv_dst.get_data_type(), mk);
    if (regrouped) pd = regrouped->pd;
    // Without AMX (grouped_bf16_nhwc_on_this_host), RegNet's groups of 16 between channels-last
    // 1x1 convolutions: oneDNN 3.2 gives jit_bf16 nChw16c for `any`, which costs a reorder of the
    // source into the kernel's scratch and leaves the squeeze-excitation Multiply a blocked bf16
    // tensor it runs as reorder+ref (0.055 ms for 144 ch 28x28 at one thread on the Zen 5 VM; over
    // nhwc it is jit:uni, 0.004 ms at 320 ch 14x14). The same jit_bf16 runs nhwc at the same speed at 14x14-28x28
    // (320 ch 14x14 40 / 39 us nhwc / nChw16c, 784 ch 7x7 32 / 32), slower only on the first
    // 112 -> 56 one (194 / 149 us), which the Multiply's reorder it saves outweighs.
    // Likewise (stem_bf16_nhwc_on_this_host) a 2D convolution of a plain source given a blocked
    // destination: the network's first, on the image, which has no brgconv for 3 input channels and
    // got jit_bf16 writing nChw16c. Its MaxPool then passed nChw16c on, so DenseNet's first dense
    // block concatenated blocked and nhwc tensors (reorder+memcpy to plain), ran its
    // BatchNormInference as ref and each 1x1 convolution reordered the plain f32 input (1.6-1.8x
    // OpenVINO's time per 1x1 there). The same jit_bf16 writes nhwc from an nhwc bf16 source at
    // the same speed (3 -> 64 7x7/2 224x224: 639 us + 55 us for the image's reorder, against 693 +
    // 32 us nChw16c; 3 -> 32 3x3/2: 116 + 55 against 120 + 32, one thread, Zen 5 VM).
    const bool stem_nhwc = bf16 && !grouped && sum_input < 0 && stem_bf16_nhwc_on_this_host() &&
                           stem_bf16_wants_nhwc(pd, n, xs);
    if (stem_nhwc || (bf16 && !regrouped && grouped && !dw && sum_input < 0 && grouped_bf16_nhwc_on_this_host() &&
                      grouped_bf16_wants_nhwc(pd, n, xs))) {
      const auto acdb = dnnl::memory::format_tag::acdb;
      try {
        auto pd2 = mk(dnnl::memory::desc(to_dims(xs), dnnl::memory::data_type::bf16, acdb), w_bf16,
                      dnnl::memory::desc(to_dims(ys), conv_dst.get_data_type(), acdb));
        const std::string impl = pd2.impl_info_str() ? pd2.impl_info_str() : "";
        if (impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0) pd = pd2;
      } catch (const dnnl::error&) {
        // no such kernel: keep the blocked one
      }
    }
    if (bias_bf16 && bf16) {
      k->bias_ = pack_constant(n.inputs[2].const_data, bias_f32, bias_md);
    } else {
      bias_md = bias_f32;
    }
  }
  std::unique_ptr<Grouped4ConvF32> grouped4;  // see grouped4_conv_f32_candidate
  // An f32 1x1 convolution ending in a Swish (EfficientNet's expand convolutions, SiLU written as
  // x * Sigmoid(x)) on a host where our pass beats oneDNN 3.2's eltwise_swish post-op
  // (swish_pass.cpp): the primitive without its last post-op, the Swish after it (run).
  std::optional<float> swish_alpha;
  if (!bf16 && !grouped && !residual_bf16 && conv_swish_pass_on_this_host() &&
      std::all_of(ws.begin() + 2, ws.end(), [](int64_t d) { return d == 1; })) {
    const std::vector<FusedOp> fused = n.attrs.fused_ops("post_ops");
    const KernelEntry* e = fused.empty() ? nullptr : find_kernel(fused.back().type);
    if (e && e->post_op && fused.back().attrs) {
      const Eltwise el = e->post_op(*fused.back().attrs);
      if (el.alg == dnnl::algorithm::eltwise_swish) swish_alpha = el.alpha;
    }
  }
  if (!bf16) {
    attr = f32_attr;
    if (swish_alpha) {
      dnnl::post_ops without_swish;
      append_post_ops(without_swish, n.attrs, 1);
      attr = default_attr();
      attr.set_post_ops(without_swish);
    }
    residual_binary = residual_bf16;  // (an f32 convolution after all, over a bf16 residual)
    if (residual_binary) {
      attr = residual_attr();
      dst_md = any_md(DType::f32, ys);
    }
    try {
      pd = mk(src_md, w_const ? w_any : w_plain, dst_md);
    } catch (const dnnl::error&) {
      // no implementation for "any": use the tensor's own layout
      pd = mk(user_src, w_const ? w_any : w_plain, dst_md);
    }
    // A convolution of a plain source (a network's first, on the image) for which oneDNN picked a
    // channel-blocked destination (nChw16c, its JIT kernel for 3 input channels) on a host where
    // it runs ordinary convolutions channels-last: the same JIT kernel writing nhwc instead, so
    // the whole network keeps one layout. Else resnet18's residual stream stayed nChw16c from the
    // stem on, and its three sum convolutions ran the older JIT kernel on it instead of brgconv
    // (resnet18 2.6%, densenet121 2.2% less CPU time; googlenet, squeezenet1_1 ~1% more).
    // Likewise a grouped convolution of 16k channels a group whose source arrives nhwc (RegNet's
    // groups of 16 between 1x1 convolutions): oneDNN 3.2 picks nChw16c for its JIT kernel, which
    // costs a reorder into the kernel's scratch before it and, after it, the squeeze-excitation
    // Multiply on the blocked tensor (a reorder to plain, oneDNN's reference binary) and the next
    // 1x1 convolution's reorder back to nhwc; the same JIT kernel runs nhwc at the same speed.
    // Below 16 a group (ResNeXt's groups of 4 and 8) the kernel alone runs 1.14x slower nhwc, but
    // the two reorders it saves cost more: nhwc there too (grouped_nhwc_width).
    if (prefer_nhwc(pd, n, grouped, sum_input, xs)) {
      auto nhwc_x = dnnl::memory::desc(to_dims(xs), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
      auto nhwc_y = dnnl::memory::desc(to_dims(ys), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
      try {
        auto pd2 = mk(nhwc_x, w_const ? w_any : w_plain, nhwc_y);
        const std::string impl = pd2.impl_info_str() ? pd2.impl_info_str() : "";
        if (impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0) pd = pd2;
      } catch (const dnnl::error&) {
        // no such kernel: keep the blocked one
      }
    }
    // Groups of 4 on an AVX2 host, source written channels-last by its producer (ResNeXt's
    // layer 1, after a 1x1 convolution): oneDNN 3.2 has only gemm:jit for them there, which the
    // rule above refuses, leaving a plain layout and a reorder on each side. Our kernel
    // (grouped4_conv_f32.cpp) runs nhwc -> nhwc; the nhwc primitive only fixes the layouts.
    if (grouped && grouped4_conv_f32_candidate(n) && n.in(0).blocked &&
        md_of(n.in(0)) == dnnl::memory::desc(to_dims(xs), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb)) {
      try {
        auto pd2 = mk(dnnl::memory::desc(to_dims(xs), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb),
                      w_any, dnnl::memory::desc(to_dims(ys), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb));
        grouped4 = plan_grouped4_conv_f32(n, pd2);
        if (grouped4) pd = pd2;
      } catch (const dnnl::error&) {
        // no nhwc primitive: oneDNN's choice
      }
    }
  }
  (void)grouped;
  k->finish(dnnl::convolution_forward(pd), pd, user_src);
  k->weights_md_ = pd.weights_desc();
  if (regrouped) {
    k->weights_ = pack_constant(regrouped->weights.data(), regrouped->plain, pd.weights_desc());
    k->weights_packed_ = true;
    k->add_exact(regrouped->exact, pack_constant(n.inputs[1].const_data, w_plain, regrouped->exact.weights_desc()));
  } else if (w_const) {
    // (f32 -> bf16 too, when the primitive is a bf16 one)
    k->weights_ = pack_constant(n.inputs[1].const_data, w_plain, pd.weights_desc());
    k->weights_packed_ = true;
  }
  else k->weights_input_ = 1;
  if (has_bias && !k->bias_) {
    k->bias_md_ = bias_md;
    k->bias_input_ = 2;
  }
  k->sum_input_ = residual_binary ? -1 : sum_input;
  if (residual_binary) {
    k->residual_input_ = sum_input;
    k->residual_md_ = residual_md;
  }
  if (bf16 && !regrouped && !grouped) {
    // (the step's thread count: primitives are created with it, executor.cpp)
    const ConvGeometry unit{{1, 1}, {0, 0}, {0, 0}, {0, 0}};
    auto split = plan_pixel_split(pd, residual_binary ? residual_md : dnnl::memory::desc(), threading_max_threads(),
                                  [&](const dnnl::memory::desc& s, const dnnl::memory::desc& w, const dnnl::memory::desc& d,
                                      const dnnl::memory::desc& r) {
                                    dnnl::primitive_attr a = attr;
                                    if (r.get_ndims() != 0) {  // residual_attr over the chunk's pixels
                                      a = default_attr();
                                      dnnl::post_ops po;
                                      po.append_binary(dnnl::algorithm::binary_add, r);
                                      append_fused_ops(po, n.attrs.fused_ops("post_ops"));
                                      a.set_post_ops(po);
                                    }
                                    return conv_primitive(unit, s, w, bias_md, d, a);
                                  });
    if (split) k->use_split(std::move(*split));
  }
  if (bf16 && grouped && !regrouped) {
    // a depthwise one: our own kernel where it qualifies (dw_conv_plan.cpp), same layouts
    k->dw_ = plan_dw_conv_bf16(n, pd);
  } else if (!bf16 && grouped && !regrouped) {
    k->dw_ = plan_dw_conv_f32(n, pd);
  }
  if (grouped4) k->dw_ = std::move(grouped4);
  if (swish_alpha) {
    k->swish_pass_ = true;
    k->swish_alpha_ = *swish_alpha;
    k->impl_ += swish_pass_exec_suffix();
  }
  if (k->dw_) k->impl_ = k->dw_->exec_type();
  if (bf16 && !k->split_ && !k->dw_) {
    // with OPFORGE_CPU_CONV_ROWS=1 (measured, not enabled: conv_row_split.cpp), any other (3x3,
    // grouped, strided) at 2+ threads (the step's count) as output-row chunks on one-thread
    // sub-primitives with these packed weights; a regrouped one's exact twin still runs whole on
    // a non-finite source (run)
    auto rows = plan_conv_row_split(
        pd, residual_binary ? residual_md : dnnl::memory::desc(), threading_max_threads(),
        [&](const dnnl::memory::desc& s, const dnnl::memory::desc& w, const dnnl::memory::desc& d,
            const dnnl::memory::desc& r, const dnnl::memory::dims& pads_l, const dnnl::memory::dims& pads_r) {
          dnnl::primitive_attr a = attr;
          if (r.get_ndims() != 0) {  // residual_attr over the chunk's rows
            a = default_attr();
            dnnl::post_ops po;
            po.append_binary(dnnl::algorithm::binary_add, r);
            append_fused_ops(po, n.attrs.fused_ops("post_ops"));
            a.set_post_ops(po);
          }
          return conv_primitive({geo.strides, geo.dilations, pads_l, pads_r}, s, w, bias_md, d, a);
        });
    if (rows) k->use_rows(std::move(*rows));
  }
  n.outputs[0].md = pd.dst_desc();
  // (a bf16 destination is never the plain f32 layout: it always counts as blocked, so the
  // tensor is sized by its descriptor and any non-oneDNN reader gets a converting reorder)
  n.outputs[0].blocked = pd.dst_desc() != plain_md(DType::f32, ys);
  return k;
}

std::unique_ptr<Kernel> make_dnnl_deconv(NodeDesc& n, bool grouped) {
  std::string why = check_conv(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  Shape ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const int sp = static_cast<int>(xs.size()) - 2;
  std::vector<int64_t> kernel(ws.end() - sp, ws.end());
  auto strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
  std::string ap = n.attrs.s("auto_pad", "explicit");
  auto pb = n.attrs.ints("pads_begin", std::vector<int64_t>(sp, 0));
  pb.resize(sp, 0);
  std::vector<int64_t> pe(sp, 0);
  for (int i = 0; i < sp; ++i) {
    int64_t ext = (kernel[i] - 1) * dil[i] + 1;
    // out = (in-1)*s + ext - pb - pe  =>  pe from the known output size
    int64_t total = (xs[2 + i] - 1) * strides[i] + ext - ys[2 + i];
    if (ap == "same_upper" || ap == "same_lower") {
      int64_t small = total / 2;
      pb[i] = ap == "same_upper" ? small : total - small;
    } else if (ap == "valid") {
      pb[i] = 0;
    }
    pe[i] = total - pb[i];
  }
  dnnl::memory::dims ddil;
  for (auto d : dil) ddil.push_back(d - 1);
  // OpenVINO weights are [C_in, C_out, k...] ([G, C_in/G, C_out/G, k...]); oneDNN's deconvolution
  // weights are [C_out, C_in, k...]: describe the same bytes with swapped strides.
  dnnl::memory::dims wdims = to_dims(ws);
  int o0 = grouped ? 1 : 0;
  std::swap(wdims[o0], wdims[o0 + 1]);
  Shape plain_strides = strides_of(ws);
  std::swap(plain_strides[o0], plain_strides[o0 + 1]);
  auto w_user = dnnl::memory::desc(wdims, dnnl::memory::data_type::f32, dnnl::memory::dims(plain_strides.begin(), plain_strides.end()));
  auto w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  bool w_const = n.is_const(1);
  auto user_src = md_of(n.in(0));
  auto dst_md = any_md(DType::f32, ys);
  dnnl::primitive_attr attr = default_attr();
  dnnl::post_ops ops;
  append_post_ops(ops, n.attrs);
  attr.set_post_ops(ops);
  bool has_bias = n.attrs.b("has_bias", false);
  dnnl::memory::desc bias_md;
  if (has_bias) bias_md = dnnl::memory::desc({ys[1]}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto mk = [&](const dnnl::memory::desc& s) {
    return has_bias ? dnnl::deconvolution_forward::primitive_desc(
                          cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, s,
                          w_const ? w_any : w_user, bias_md, dst_md, to_dims(strides), ddil, to_dims(pb), to_dims(pe), attr)
                    : dnnl::deconvolution_forward::primitive_desc(
                          cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, s,
                          w_const ? w_any : w_user, dst_md, to_dims(strides), ddil, to_dims(pb), to_dims(pe), attr);
  };
  dnnl::deconvolution_forward::primitive_desc pd;
  // INFERENCE_PRECISION_HINT=bf16 (emit.py emit_deconv): bf16 source and weights, f32 sums,
  // bf16 destination where only bf16 readers take it ("bf16_output"): oneDNN's AMX kernel,
  // ~5x its f32 one (256 -> 128 ch, 2x2/2 on 16x16: 0.35 -> 0.06 ms at one thread). A
  // reference kernel (a host without bf16) keeps f32.
  bool bf16 = false;
  if (w_const && n.attrs.b("bf16", false)) {
    const bool bf16_dst = n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
    const auto f32_dst = dst_md;
    if (bf16_dst) dst_md = any_md(DType::bf16, ys);
    w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any);
    try {
      pd = mk(any_md(DType::bf16, xs));
      bf16 = !is_reference_impl(pd);
    } catch (const dnnl::error&) {
      bf16 = false;
    }
    if (!bf16) {
      dst_md = f32_dst;
      w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
    }
  }
  // (a bf16 source under an f32 primitive: converted by the source reorder)
  const bool src_bf16 = user_src.get_data_type() == dnnl::memory::data_type::bf16;
  if (!bf16) {
    try {
      pd = mk(n.in(0).blocked && !src_bf16 ? user_src : any_md(DType::f32, xs));
    } catch (const dnnl::error&) {
      pd = mk(user_src);
    }
  }
  auto k = std::make_unique<WindowKernel>();
  k->finish(dnnl::deconvolution_forward(pd), pd, user_src);
  k->weights_md_ = pd.weights_desc();
  if (w_const) {
    k->weights_ = pack_constant(n.inputs[1].const_data, w_user, pd.weights_desc());
    k->weights_packed_ = true;
  } else {
    k->weights_md_ = w_user;
    k->weights_input_ = 1;
    if (pd.weights_desc() != w_user) throw CompileFailure("non-constant deconvolution weights in this layout are not supported");
  }
  if (has_bias) {
    k->bias_md_ = bias_md;
    k->bias_input_ = 2;
  }
  n.outputs[0].md = pd.dst_desc();
  n.outputs[0].blocked = pd.dst_desc() != plain_md(DType::f32, ys);
  return k;
}

std::unique_ptr<Kernel> make_dnnl_pool(NodeDesc& n, bool max_pool) {
  if (n.in(0).dtype != DType::f32) throw CompileFailure("the CPU device pools f32 tensors only");
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  const int sp = static_cast<int>(xs.size()) - 2;
  if (sp < 1 || sp > 3) throw CompileFailure("pooling of rank " + std::to_string(xs.size()) + " is not supported");
  auto kernel = n.attrs.ints("kernel");
  auto strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pb, pe;
  window_pads(n, xs, ys, kernel, strides, dil, pb, pe);
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (!max_pool) {
    bool exclude = n.attrs.b("exclude-pad", n.attrs.b("exclude_pad", false));
    alg = exclude ? dnnl::algorithm::pooling_avg_exclude_padding : dnnl::algorithm::pooling_avg_include_padding;
    // OpenVINO never counts the extra cells that ceil rounding adds past the explicit padding
    // as part of the window; oneDNN would with include_padding. Keep exactness over speed.
    if (!exclude) {
      auto pe0 = n.attrs.ints("pads_end", std::vector<int64_t>(sp, 0));
      std::string ap = n.attrs.s("auto_pad", "explicit");
      for (int i = 0; i < sp; ++i)
        if ((ap == "explicit" || ap == "notset") && pe[i] > (pe0.size() > static_cast<size_t>(i) ? pe0[i] : 0))
          throw CompileFailure("AvgPool with exclude-pad=false and ceil rounding past the padding is not supported");
    }
  }
  dnnl::memory::dims ddil;
  for (auto d : dil) ddil.push_back(d - 1);
  auto src = md_of(n.in(0));
  // a bf16 source (a bf16 program's convolution output, see emit.py _bf16_storable) pools into
  // bf16: oneDNN pools in one type
  auto dst = src.get_data_type() == dnnl::memory::data_type::bf16 ? any_md(DType::bf16, ys) : any_md(DType::f32, ys);
  dnnl::pooling_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, alg, src, dst,
                                           to_dims(strides), to_dims(kernel), ddil, to_dims(pb), to_dims(pe),
                                           default_attr());
  auto k = std::make_unique<WindowKernel>();
  k->finish(dnnl::pooling_forward(pd), pd, src);
  k->nan_max_ = max_pool;
  n.outputs[0].md = pd.dst_desc();
  n.outputs[0].blocked = pd.dst_desc() != plain_md(DType::f32, ys);
  return k;
}

}  // namespace opforge_cpu

namespace opforge_cpu {

namespace {
class MatMulKernel : public DnnlKernel {
 public:
  int sum_input = -1;
  bool weights_packed = false;
  int required_inplace_input(int out) const override { return out == 0 ? sum_input : -1; }
  bool packs_input(int i) const override { return i == 1 && weights_packed; }
  void setup(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd) { set_primitive(p, pd); }
  void in(int arg, int idx, const dnnl::memory::desc& md) { arg_input(arg, idx, md); }
  void out(int arg, int idx, const dnnl::memory::desc& md) { arg_output(arg, idx, md); }
  void cst(int arg, dnnl::memory m) { arg_const(arg, std::move(m)); }
};

// Plain descriptor of `s` padded to `rank` with leading 1s, optionally with the last two
// dimensions swapped (a transposed operand read in place).
dnnl::memory::desc matrix_md(const Shape& s, int rank, bool transpose) {
  Shape dims(rank - s.size(), 1);
  dims.insert(dims.end(), s.begin(), s.end());
  Shape st = strides_of(dims);
  if (transpose) {
    std::swap(dims[rank - 1], dims[rank - 2]);
    Shape mem = dims;
    std::swap(mem[rank - 1], mem[rank - 2]);
    Shape ms = strides_of(mem);
    st = ms;
    std::swap(st[rank - 1], st[rank - 2]);
  }
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(st.begin(), st.end()));
}
}  // namespace

// The operand read in place through strides when it is the Transpose (`perm`) of a stored
// tensor of shape `s` (emit.py _folded_transpose), padded to `rank`, then as matrix_md.
static dnnl::memory::desc permuted_md(const Shape& s, const Shape& st0, const std::vector<int64_t>& perm, int rank,
                                      bool transpose) {
  if (perm.size() != s.size()) throw CompileFailure("MatMul: the folded Transpose's order does not match its input's rank");
  Shape dims, st;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(s.size())) throw CompileFailure("MatMul: bad folded Transpose order");
    dims.push_back(s[p]);
    st.push_back(st0[p]);
  }
  const int64_t total = std::max<int64_t>(numel(s), 1);
  dims.insert(dims.begin(), rank - dims.size(), 1);
  st.insert(st.begin(), rank - st.size(), total);
  if (transpose) {
    std::swap(dims[rank - 1], dims[rank - 2]);
    std::swap(st[rank - 1], st[rank - 2]);
  }
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(st.begin(), st.end()));
}

static dnnl::memory::desc permuted_md(const Shape& s, const std::vector<int64_t>& perm, int rank, bool transpose) {
  return permuted_md(s, strides_of(s), perm, rank, transpose);
}

// pick_a / pick_b = [axis, index] (emit.py _folded_pick): the operand is slice `index` along
// `axis` of the stored f32 tensor `s` (torchvision Swin's qkv[0], qkv[1], qkv[2]: a Gather of one
// constant index each, which copied a third of the projection per part). It is read in place:
// the stored tensor's strides without that axis, `offset_bytes` into it.
struct PickedOperand {
  Shape shape, strides;
  size_t offset_bytes = 0;
};
static PickedOperand picked_operand(const Shape& s, const std::vector<int64_t>& pick) {
  if (pick.size() != 2 || s.size() < 2) throw CompileFailure("MatMul: a picked operand needs [axis, index] of a rank >= 2 tensor");
  const int64_t axis = pick[0], index = pick[1];
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()) || index < 0 || index >= s[axis])
    throw CompileFailure("MatMul: the picked operand's axis or index is out of range");
  const Shape st = strides_of(s);
  PickedOperand p;
  for (size_t d = 0; d < s.size(); ++d) {
    if (static_cast<int64_t>(d) == axis) continue;
    p.shape.push_back(s[d]);
    p.strides.push_back(st[d]);
  }
  p.offset_bytes = static_cast<size_t>(index * st[axis]) * sizeof(float);
  return p;
}

// A dense bf16 layout of `md`'s dims in which the dimension `md` reads with unit stride stays
// innermost (the rest row-major): converting a permuted operand into it moves whole rows of the
// source (attention's 64 head values), never single elements; for K's [B, H, D, S] it is the
// transposed-B layout the bf16 MatMul reads anyway.
static dnnl::memory::desc dense_bf16_keeping_inner(const dnnl::memory::desc& md) {
  auto dims = md.get_dims();
  auto st = md.get_strides();
  const int r = static_cast<int>(dims.size());
  int inner = r - 1;
  for (int i = 0; i < r; ++i)
    if (st[i] == 1 && dims[i] != 1) inner = i;
  dnnl::memory::dims out(r);
  int64_t step = dims[inner];
  out[inner] = 1;
  for (int i = r - 1; i >= 0; --i) {
    if (i == inner) continue;
    out[i] = step;
    step *= dims[i];
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, out);
}

std::string check_matmul(const NodeDesc& n) {
  if (n.in(0).dtype != DType::f32 || n.in(1).dtype != DType::f32) return "the CPU device runs MatMul in f32 only";
  if (n.in(0).shape.size() > 12 || n.in(1).shape.size() > 12) return "MatMul of rank above 12 is not supported";
  return "";
}

std::unique_ptr<Kernel> make_dnnl_matmul(NodeDesc& n) {
  std::string why = check_matmul(n);
  if (!why.empty()) throw CompileFailure(why);
  Shape a = n.in(0).shape, b = n.in(1).shape;
  bool ta = n.attrs.b("transpose_a", false), tb = n.attrs.b("transpose_b", false);
  // 1-D operands: a -> [1, K], b -> [K, 1]; transposing a vector changes nothing.
  if (a.size() == 1) { a = {1, a[0]}; ta = false; }
  if (b.size() == 1) { b = {b[0], 1}; tb = false; }
  // Constant 2-D weights (B's leading dimensions all 1) under an A of rank > 2: one product of
  // all of A's rows, [M, K] x [K, N], the same bytes in and out. Taken as batches ([1, 7, 7, 768]
  // is 7 products of 7 rows each, the weights broadcast) oneDNN runs one small GEMM per batch
  // and streams the whole weight matrix through each: ConvNeXt-T's last-stage MLP MatMuls took
  // ~9.5 ms each at 1 thread where OpenVINO's fully connected takes ~3.9. Not with the
  // operations that need A's own dimensions: a transposed or permuted A, a permuted result, a
  // broadcast binary operand (add_input).
  if (n.is_const(1) && !ta && a.size() > 2 && b.size() >= 2 && n.attrs.ints("perm_a", {}).empty() &&
      n.attrs.ints("perm_b", {}).empty() && n.attrs.ints("perm_out", {}).empty() && n.attrs.i("add_input", -1) < 0 &&
      std::all_of(b.begin(), b.end() - 2, [](int64_t d) { return d == 1; })) {
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < a.size(); ++d) rows *= a[d];
    a = {rows, a.back()};
    b = {b[b.size() - 2], b.back()};
  }
  // Stored shapes (before transposition) pad to rank; logical dims come from the descriptors.
  // perm_a/perm_b: the operand is a Transpose of the stored tensor, read through its strides.
  auto perm_a = n.attrs.ints("perm_a", {}), perm_b = n.attrs.ints("perm_b", {});
  // pick_a/pick_b: the operand is one slice of the stored tensor (picked_operand), then permuted
  // as above (an identity order when none is folded: the code below then takes the strided
  // paths, the ones that convert any source layout); bf16 only (the WindowKernel offsets it)
  const auto pick_a = n.attrs.ints("pick_a", {}), pick_b = n.attrs.ints("pick_b", {});
  std::optional<PickedOperand> pa, pb;
  if (!pick_a.empty() || !pick_b.empty()) {
    // (a folded Softmax converts input 0 itself: never picked)
    if (!n.attrs.b("bf16", false) || ta || tb || n.is_const(1) || n.in(0).shape.size() != a.size() ||
        n.in(1).shape.size() != b.size() || (!pick_a.empty() && (n.attrs.b("softmax_a", false) || n.in(0).blocked)) ||
        (!pick_b.empty() && n.in(1).blocked))
      throw CompileFailure("MatMul: a picked operand needs a bf16 MatMul of two plain f32 run-time operands");
    if (!pick_a.empty()) {
      pa = picked_operand(a, pick_a);
      a = pa->shape;
      if (perm_a.empty()) for (size_t d = 0; d < a.size(); ++d) perm_a.push_back(static_cast<int64_t>(d));
    }
    if (!pick_b.empty()) {
      pb = picked_operand(b, pick_b);
      b = pb->shape;
      if (perm_b.empty()) for (size_t d = 0; d < b.size(); ++d) perm_b.push_back(static_cast<int64_t>(d));
    }
  }
  int rank = static_cast<int>(std::max(a.size(), b.size()));
  auto amd = perm_a.empty() ? matrix_md(a, rank, ta) : pa ? permuted_md(a, pa->strides, perm_a, rank, ta) : permuted_md(a, perm_a, rank, ta);
  auto bmd_user = perm_b.empty() ? matrix_md(b, rank, tb)
                  : pb                ? permuted_md(b, pb->strides, perm_b, rank, tb)
                                      : permuted_md(b, perm_b, rank, tb);
  auto ad = amd.get_dims(), bd = bmd_user.get_dims();
  dnnl::memory::dims cd(rank);
  for (int i = 0; i < rank - 2; ++i) cd[i] = std::max(ad[i], bd[i]);
  cd[rank - 2] = ad[rank - 2];
  cd[rank - 1] = bd[rank - 1];
  auto cmd = plain_md(DType::f32, Shape(cd.begin(), cd.end()));
  // perm_out: the result is written as its Transpose by this order (the output tensor is the
  // Transpose's, plain); dimension perm[j] of the result steps by the output's stride j
  const auto perm_out = n.attrs.ints("perm_out", {});
  if (!perm_out.empty()) {
    const Shape& ys = n.outputs[0].shape;
    if (perm_out.size() != static_cast<size_t>(rank) || ys.size() != static_cast<size_t>(rank))
      throw CompileFailure("MatMul: the fused Transpose's order does not match the result's rank");
    const Shape yst = strides_of(ys);
    dnnl::memory::dims cst(rank, 0);
    for (int j = 0; j < rank; ++j) {
      const int64_t p = perm_out[j];
      if (p < 0 || p >= rank || ys[j] != cd[p]) throw CompileFailure("MatMul: bad fused Transpose order");
      cst[p] = yst[j];
    }
    cmd = dnnl::memory::desc(cd, dnnl::memory::data_type::f32, cst);
  }
  bool has_bias = n.attrs.b("has_bias", false);
  int sum_input = static_cast<int>(n.attrs.i("sum_input", -1));
  dnnl::memory::desc bias_md;
  if (has_bias) {
    Shape bs = n.in(2).shape;
    Shape dims(rank - std::min<size_t>(rank, bs.size()), 1);
    dims.insert(dims.end(), bs.end() - std::min<size_t>(rank, bs.size()), bs.end());
    bias_md = plain_md(DType::f32, dims);
  }
  dnnl::primitive_attr attr = default_attr();
  dnnl::post_ops ops;
  // add_input: a tensor broadcast-added after the scale (attention's mask), a binary post-op
  const int add_input = static_cast<int>(n.attrs.i("add_input", -1));
  int add_post = -1;
  dnnl::memory::desc add_md;
  if (add_input >= 0) {
    Shape as = n.in(add_input).shape;
    if (as.size() > static_cast<size_t>(rank)) throw CompileFailure("MatMul: the fused Add's operand has a higher rank");
    as.insert(as.begin(), rank - as.size(), 1);
    add_md = plain_md(DType::f32, as);
    if (sum_input >= 0) ops.append_sum(1.f);
    if (n.attrs.has("out_scale"))
      ops.append_eltwise(dnnl::algorithm::eltwise_linear, static_cast<float>(n.attrs.f("out_scale")), 0.f);
    add_post = ops.len();
    ops.append_binary(dnnl::algorithm::binary_add, add_md);
    append_fused_ops(ops, n.attrs.fused_ops("post_ops"));
  } else {
    append_post_ops(ops, n.attrs);
  }
  // mul_input: a tensor of the result's shape multiplied in last (a gated FFN's gate: T5's
  // gelu(x W0) * (x W1), Llama's silu(x Wg) * (x Wu); emit.py _gate_operand), a binary post-op,
  // so the product is one step and one pass over memory instead of a MatMul and a Multiply.
  // Read under the result's dims: dense in the same order, whether or not the rows were taken as
  // one [M, K] matrix above.
  const int mul_input = static_cast<int>(n.attrs.i("mul_input", -1));
  dnnl::memory::desc mul_md;
  int mul_post = -1;
  if (mul_input >= 0) {
    if (add_input >= 0) throw CompileFailure("MatMul: a fused gate Multiply and a fused mask Add together");
    if (mul_input >= static_cast<int>(n.inputs.size()) || n.in(mul_input).dtype != DType::f32 ||
        n.in(mul_input).blocked || numel(n.in(mul_input).shape) != numel(Shape(cd.begin(), cd.end())) ||
        n.in(mul_input).shape != n.outputs[0].shape)
      throw CompileFailure("MatMul: the fused Multiply's operand is not an f32 tensor of the result's shape");
    mul_md = plain_md(DType::f32, Shape(cd.begin(), cd.end()));
    mul_post = ops.len();
    ops.append_binary(dnnl::algorithm::binary_mul, mul_md);
  }
  attr.set_post_ops(ops);
  bool w_const = n.is_const(1);
  auto mk = [&](const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
    return has_bias ? dnnl::matmul::primitive_desc(cpu_engine(), a, b, bias_md, cmd, attr)
                    : dnnl::matmul::primitive_desc(cpu_engine(), a, b, cmd, attr);
  };
  // softmax_a: input 0 is the f32 input of a Softmax over its last axis that this (bf16) MatMul
  // folds (emit.py _folded_softmax): the source's conversion to bf16 becomes that softmax
  const bool softmax_a = n.attrs.b("softmax_a", false);
  if (softmax_a && (!n.attrs.b("bf16", false) || !perm_a.empty() || ta || n.in(0).shape.size() < 2 ||
                    n.in(0).shape.back() <= 0))
    throw CompileFailure("MatMul: a folded Softmax needs a bf16 MatMul of a plain, untransposed source of rank >= 2");
  // only the source of a bf16 MatMul arrives in its producer's layout (takes_blocked, bf16)
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.in(static_cast<int>(i)).blocked && (i > 0 || !n.attrs.b("bf16", false)))
      throw CompileFailure("MatMul: input " + std::to_string(i) + " arrived in a blocked layout it cannot read");
  if (n.attrs.b("bf16", false)) {
    // INFERENCE_PRECISION_HINT=bf16: bf16 operands, f32 accumulation, bias and output. The f32
    // source is converted into scratch before each run (a WindowKernel does exactly that);
    // constant weights are packed as bf16 once, here; run-time ones (attention's Q x K^T,
    // P x V) are converted into scratch like the source, in their own layout.
    auto abf = perm_a.empty() ? dnnl::memory::desc(amd.get_dims(), dnnl::memory::data_type::bf16, amd.get_strides())
                              : dense_bf16_keeping_inner(amd);
    // src_bf16: the source is the bf16 result of the bf16 MatMul before (its bf16_output, the
    // executor passes it as it is: attribute takes_blocked), read without a conversion
    const bool src_bf16 = n.in(0).blocked;
    auto a_user = amd;
    if (src_bf16) {
      auto md = n.in(0).md;
      if (md.get_data_type() != dnnl::memory::data_type::bf16 || !perm_a.empty() || ta || softmax_a)
        throw CompileFailure("MatMul: a bf16 source must be plain and untransposed");
      if (md.get_dims() != amd.get_dims()) {
        // the producer or this MatMul took A's rows as one [M, K] matrix (constant 2-D weights):
        // the same dense bytes under the other's dimensions
        try {
          md = md.reshape(amd.get_dims());
        } catch (const dnnl::error&) {
          throw CompileFailure("MatMul: a bf16 source whose dimensions do not reshape to the product's");
        }
      }
      abf = a_user = md;
    }
    // bf16_output (emit.py _bf16_matmul_output): every reader is such a MatMul, so the result is
    // written in bf16 (half the bytes, no conversion in the reader); not with a sum post-op
    // (in place over an f32 residual) or a permuted destination
    const auto cmd_f32 = cmd;
    const bool dst_bf16 = n.attrs.b("bf16_output", false) && !n.allow_blocked_output.empty() &&
                          n.allow_blocked_output[0] && perm_out.empty() && sum_input < 0;
    if (dst_bf16) cmd = plain_md(DType::bf16, Shape(cd.begin(), cd.end()));
    auto bbf = w_const ? dnnl::memory::desc(bd, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any)
               : perm_b.empty() ? dnnl::memory::desc(bd, dnnl::memory::data_type::bf16, bmd_user.get_strides())
                                : dense_bf16_keeping_inner(bmd_user);
    dnnl::matmul::primitive_desc bpd;
    bool ok = false;
    try {
      bpd = mk(abf, bbf);
      if (dst_bf16 && is_reference_impl(bpd)) {  // an f32 result then
        cmd = cmd_f32;
        bpd = mk(abf, bbf);
      }
      // (a folded Softmax and a bf16 source need the bf16 kernel: oneDNN's reference one is slow,
      // still right; so does a picked operand, which only this kernel offsets)
      ok = !is_reference_impl(bpd) || softmax_a || src_bf16 || pa || pb;
    } catch (const dnnl::error& e) {
      if (softmax_a || src_bf16 || pa || pb)
        throw CompileFailure(
            std::string("MatMul with a folded Softmax, a bf16 source or a picked operand: oneDNN has no bf16 kernel: ") +
            e.what());
      ok = false;
    }
    if (ok) {
      auto k = std::make_unique<WindowKernel>();
      k->finish(dnnl::matmul(bpd), bpd, a_user);
      if (pa || pb) {
        k->in_offset_.assign(2, 0);
        if (pa) k->in_offset_[0] = pa->offset_bytes;
        if (pb) k->in_offset_[1] = pb->offset_bytes;
      }
      if (bpd.dst_desc().get_data_type() == dnnl::memory::data_type::bf16) {
        n.outputs[0].md = bpd.dst_desc();
        n.outputs[0].blocked = true;
      }
      if (softmax_a) {
        // the bf16 source in scratch is dense row-major (abf: amd's plain strides), rows of K
        k->softmax_len_ = n.in(0).shape.back();
        k->softmax_rows_ = numel(n.in(0).shape) / k->softmax_len_;
        if (!k->has_src_reorder_) throw CompileFailure("MatMul with a folded Softmax: no bf16 source buffer");
        const int ai = static_cast<int>(n.attrs.i("softmax_add_input", -1));
        if (ai >= 0) {
          // [1, ..., 1, R, K] rows added to every block of R score rows: R is 1 or the scores' own
          // row count (a mask over the batch and heads), or [..., S, K] of the scores' shape
          const Shape& s = n.in(0).shape;
          if (ai >= static_cast<int>(n.inputs.size()) || n.in(ai).blocked ||
              n.in(ai).dtype != DType::f32 || n.in(ai).shape.empty() || n.in(ai).shape.back() != s.back() ||
              n.in(ai).shape.size() > s.size())
            throw CompileFailure("MatMul: the folded Softmax's Add operand has a shape or type it cannot take");
          // (stop 16) any addend whose dims after its leading ones are the scores' trailing dims:
          // Swin's position bias [1, H, S, S] over [windows, H, S, S] too, row r taking row
          // r % (H x S), numpy's broadcast
          const Shape& as = n.in(ai).shape;
          const int64_t arows = numel(as) / as.back();
          const auto lead = std::find_if(as.begin(), as.end() - 1, [](int64_t d) { return d != 1; });
          const size_t tail = static_cast<size_t>(as.end() - lead);
          const bool fits = arows >= 1 && Shape(lead, as.end()) == Shape(s.end() - tail, s.end());
          if (!fits) throw CompileFailure("MatMul: the folded Softmax's Add operand does not broadcast by rows");
          k->softmax_add_input_ = ai;
          k->softmax_add_rows_ = arows;
        }
      }
      if (w_const) {
        k->weights_md_ = bpd.weights_desc();
        k->weights_ = pack_constant(n.inputs[1].const_data, bmd_user, bpd.weights_desc());
        k->weights_packed_ = true;
      } else {
        k->convert_weights(bmd_user, bpd.weights_desc());
        k->weights_input_ = 1;
        if (!has_bias && mul_input < 0 && !ta) {
          // attention's Q x K^T and P x V at 2+ threads (the step's count, as primitives are
          // created with it): one region of chunks that convert their own operands (through
          // the strides of folded head-split Transposes too)
          AttnSplitOperands ops;
          ops.convert_src = k->has_src_reorder_ && !softmax_a;
          ops.src_user = a_user;
          ops.wei_user = bmd_user;
          if (auto split = plan_attn_split(bpd, ops, threading_max_threads())) {
            k->use_attn_split(std::move(*split));
            k->attn_pd_ = bpd;
            k->attn_ops_ = ops;
          }
        }
      }
      if (has_bias) {
        k->bias_md_ = bias_md;
        k->bias_input_ = 2;
      }
      k->sum_input_ = sum_input;
      if (add_input >= 0) {
        k->residual_input_ = add_input;
        k->residual_post_op_ = add_post;
        k->residual_md_ = add_md;
      }
      if (mul_input >= 0) {
        k->residual_input_ = mul_input;
        k->residual_post_op_ = mul_post;
        k->residual_md_ = mul_md;
      }
      if (w_const && !softmax_a && add_input < 0 && !ta && perm_a.empty() && perm_out.empty() && rank == 2) {
        // at 2+ threads (the step's count: primitives are created with it, executor.cpp), row
        // chunks on one-thread sub-primitives with these packed weights (matmul_row_split.cpp)
        auto split = plan_row_split(bpd, mul_input >= 0 ? mul_md : dnnl::memory::desc(), threading_max_threads(),
                                    [&](const dnnl::memory::desc& s, const dnnl::memory::desc& w,
                                        const dnnl::memory::desc& d, const dnnl::memory::desc& g) {
                                      dnnl::primitive_attr a = default_attr();
                                      dnnl::post_ops po;
                                      append_post_ops(po, n.attrs);
                                      if (g.get_ndims() != 0) po.append_binary(dnnl::algorithm::binary_mul, g);
                                      a.set_post_ops(po);
                                      return has_bias ? dnnl::matmul::primitive_desc(cpu_engine(), s, w, bias_md, d, a)
                                                      : dnnl::matmul::primitive_desc(cpu_engine(), s, w, d, a);
                                    });
        if (split) k->use_split(std::move(*split), "+rows");
      }
      return k;
    }
    cmd = cmd_f32;
  }
  auto bmd = w_const ? dnnl::memory::desc(bd, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any) : bmd_user;
  if (w_const && perm_a.empty() && add_input < 0 && mul_input < 0 && perm_out.empty()) {
    // activations x constant weights as an inner product, where chosen (fully_connected.hpp)
    if (auto fc = make_fully_connected(n)) return fc;
  }
  auto pd = mk(amd, bmd);
  auto k = std::make_unique<MatMulKernel>();
  k->setup(dnnl::matmul(pd), pd);
  k->in(DNNL_ARG_SRC, 0, amd);
  if (w_const) {
    k->cst(DNNL_ARG_WEIGHTS, pack_constant(n.inputs[1].const_data, bmd_user, pd.weights_desc()));
    k->weights_packed = true;
  }
  else k->in(DNNL_ARG_WEIGHTS, 1, bmd_user);
  if (has_bias) k->in(DNNL_ARG_BIAS, 2, bias_md);
  if (add_input >= 0) k->in(DNNL_ARG_ATTR_MULTIPLE_POST_OP(add_post) | DNNL_ARG_SRC_1, add_input, add_md);
  if (mul_input >= 0) k->in(DNNL_ARG_ATTR_MULTIPLE_POST_OP(mul_post) | DNNL_ARG_SRC_1, mul_input, mul_md);
  k->out(DNNL_ARG_DST, 0, cmd);
  k->sum_input = sum_input;
  return k;
}

namespace {

// The Q x K^T step of a fused attention: its work runs in the P x V step (fuse_attention).
class FusedAwayKernel : public Kernel {
 public:
  void run(RunContext&, const TensorView*, TensorView*, Bound*) override {}
  std::string impl_name() const override { return "fused_attention"; }
};

}  // namespace

bool fuse_attention(std::unique_ptr<Kernel>& qk, Kernel* pv, int pv_inputs) {
  if (!fused_attn_enabled()) return false;
  auto* a = dynamic_cast<WindowKernel*>(qk.get());
  auto* b = dynamic_cast<WindowKernel*>(pv);
  if (a == nullptr || b == nullptr || a == b || !a->attn_ || !a->attn_pd_ || !b->attn_ || b->softmax_len_ == 0 ||
      a->softmax_len_ != 0 || a->fused_qk_ || b->fused_qk_ || a->sum_input_ >= 0 || a->has_exact_ || a->nan_max_ ||
      a->dst_md_.get_data_type() != dnnl::memory::data_type::f32)
    return false;
  // Q x K^T re-planned with P x V's chunks: chunk i writes exactly the score rows P x V's chunk i reads
  const auto [group, rows] = attn_fused_chunking(*b->attn_);
  if (rows <= 0) return false;
  AttnSplitOperands ops = a->attn_ops_;
  ops.force_group = group;
  ops.force_rows = rows;
  std::optional<AttnSplit> split = plan_attn_split(*a->attn_pd_, ops, b->attn_->threads);
  if (!split || !attn_chunks_match(*split, *b->attn_)) return false;
  a->prim_scratch_ = std::max(a->prim_scratch_, static_cast<size_t>(split->threads) *
                                                    (split->slot_scratch + split->slot_bytes()));
  a->attn_ = std::move(*split);
  b->impl_ += "+fused" + std::to_string(b->attn_->chunks.size());
  b->fused_inputs_ = pv_inputs;
  b->fused_qk_.reset(static_cast<WindowKernel*>(qk.release()));
  qk = std::make_unique<FusedAwayKernel>();
  return true;
}

}  // namespace opforge_cpu
