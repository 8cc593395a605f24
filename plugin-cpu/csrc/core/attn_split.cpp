// Attention's bf16 MatMuls of two run-time operands at 2+ threads as chunks the threads claim.
//
// Unsplit, such a step is three parallel regions: the source's f32 -> bf16 conversion (or the
// folded Softmax writing bf16 P), the weights' conversion (K^T or V), then oneDNN's static
// 2-thread split of the product. timm_deit_tiny bf16 (3 heads of 197 x 64 x 197) ran Q x K^T in
// 72 us at 1 thread and 125 at 2, P x V 130 -> 140: each region is a fork/join, and oneDNN's
// halves are fixed, so a thread that wakes late or lost its vCPU holds the step up. Here the step
// is one region (chunk_pool.cpp's run_chunks): each chunk of (batches, row block) converts its
// own source rows (or computes their softmax), the weights of its batches, and runs a one-thread
// brgemm sub-primitive on them with the step's post-ops, writing at its offset of the
// destination (a fused head merge's strides included). When a batch is cut into row blocks, each
// thread converts the batch's weights into a buffer of its own, once for consecutive blocks of
// one batch (a few us of a head's K^T or V more; a chunk waiting for another thread's conversion
// would wait for a thread that may have lost its vCPU).
#include "core/attn_split.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/bf16_bits.hpp"
#include "core/chunk_pool.hpp"
#include "core/chunk_split.hpp"
#include "core/threading.hpp"  // with_threads
#include "core/dnnl_util.hpp"
#include "core/env_switch.hpp"
#include "core/primitive_log.hpp"
#include "core/softmax_rows.hpp"

namespace opforge_cpu {

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

bool split_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_ATTN_SPLIT");
  return on;
}

// Chunks a thread: 2 by default (a thread that lost its vCPU for a while holds the step up by
// one small chunk only). OPFORGE_CPU_ATTN_SPLIT_CHUNKS overrides it, for measuring.
int64_t chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_ATTN_SPLIT_CHUNKS", 2));
  return value;
}

// Chunks a thread when they hold all heads (a fused head merge): 1 by default. Per node, same
// build, bf16 2 threads under chrt (load 6.4-7.3), P x V split / unsplit with 1 and 2 chunks a
// thread: hf_roberta_small 0.95 / 1.07, hf_distilbert 0.97 / 1.05, timm_deit_tiny 0.94 / 0.94
// (each chunk converts the batch's V into its thread's buffer, and short row blocks of every head
// keep AMX tiles partly empty). OPFORGE_CPU_ATTN_SPLIT_HEAD_CHUNKS overrides it, for measuring.
int64_t head_chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_ATTN_SPLIT_HEAD_CHUNKS", 1));
  return value;
}

bool plain(const dnnl::memory::desc& md) {
  if (md.get_inner_nblks() != 0) return false;
  const auto d = md.get_dims(), s = md.get_strides();
  int64_t want = 1;
  for (int i = md.get_ndims() - 1; i >= 0; --i) {
    if (d[i] != 1 && s[i] != want) return false;
    want *= d[i];
  }
  return true;
}

// The stride of the flattened batch dims (all but the last two) when it is uniform: each batch
// dim of size > 1 steps by the next inner one's stride times its size. 0 when there is one batch.
std::optional<int64_t> batch_stride(const dnnl::memory::desc& md, int skip = 0) {
  const auto d = md.get_dims(), s = md.get_strides();
  int64_t stride = 0, next = 0;
  for (int i = md.get_ndims() - 3 - skip; i >= 0; --i) {
    if (d[i] == 1) continue;
    if (stride == 0) stride = s[i];
    else if (s[i] != next) return std::nullopt;
    next = s[i] * d[i];
  }
  return stride;
}

}  // namespace

std::optional<AttnSplit> plan_attn_split(const dnnl::matmul::primitive_desc& pd, const AttnSplitOperands& ops,
                                         int threads) {
  if (threads <= 1 || !split_enabled()) return std::nullopt;
  const auto src = pd.src_desc(), wei = pd.weights_desc(), dst = pd.dst_desc();
  const int r = src.get_ndims();
  if (src.get_data_type() != dt::bf16 || wei.get_data_type() != dt::bf16 || r < 2 || wei.get_ndims() != r ||
      dst.get_ndims() != r || wei.get_inner_nblks() != 0 || dst.get_inner_nblks() != 0)
    return std::nullopt;
  if (dst.get_data_type() != dt::f32 && dst.get_data_type() != dt::bf16) return std::nullopt;
  const auto sd = src.get_dims(), wd = wei.get_dims(), dd = dst.get_dims();
  AttnSplit s;
  s.M = sd[r - 2];
  s.K = sd[r - 1];
  s.N = wd[r - 1];
  if (wd[r - 2] != s.K || dd[r - 2] != s.M || dd[r - 1] != s.N || s.M < 1 || s.K < 1 || s.N < 1) return std::nullopt;
  for (int i = 0; i < r - 2; ++i) {
    if (sd[i] != dd[i] || wd[i] != dd[i]) return std::nullopt;  // a broadcast operand: not chunked
    s.batches *= dd[i];
  }
  // the source as dense rows [batches x M, K] (what the conversion and the softmax write)
  if (!plain(src)) return std::nullopt;
  // a batch's offset in an input stored through its own strides
  auto batch_offsets = [&](const dnnl::memory::desc& md) {
    const auto st = md.get_strides();
    std::vector<int64_t> off(static_cast<size_t>(s.batches), 0);
    for (int64_t f = 0; f < s.batches; ++f) {
      int64_t rest = f, o = 0;
      for (int i = r - 3; i >= 0; --i) {
        o += rest % dd[i] * st[i];
        rest /= dd[i];
      }
      off[static_cast<size_t>(f)] = o;
    }
    return off;
  };
  if (ops.convert_src) {
    // rows of K read with unit stride (the head split folded into the strides moves whole rows)
    const auto& u = ops.src_user;
    if (u.get_data_type() != dt::f32 || u.get_dims() != sd || u.get_inner_nblks() != 0 ||
        (u.get_strides()[r - 1] != 1 && s.K != 1))
      return std::nullopt;
    s.dense_src = plain(u);
    s.src_user_off = batch_offsets(u);
    s.src_user_row = u.get_strides()[r - 2];
  }
  // the weights' bf16 buffer as dense per-batch slabs of K x N (K rows of N, or N columns of K)
  const auto ws = wei.get_strides();
  const bool rows_n = ws[r - 2] == s.N && ws[r - 1] == 1, cols_k = ws[r - 2] == 1 && ws[r - 1] == s.K;
  const auto wbs = batch_stride(wei);
  if (!(rows_n || cols_k) || !wbs || (*wbs != 0 && *wbs != s.K * s.N)) return std::nullopt;
  {
    // the f32 weights: lines of the same unit-stride dimension
    const auto& u = ops.wei_user;
    const auto us = u.get_strides();
    if (u.get_data_type() != dt::f32 || u.get_dims() != wd || u.get_inner_nblks() != 0) return std::nullopt;
    if (rows_n ? (us[r - 1] != 1 && s.N != 1) : (us[r - 2] != 1 && s.K != 1)) return std::nullopt;
    s.dense_wei = us == ws;
    s.wei_user_off = batch_offsets(u);
    s.wei_lines = rows_n ? s.K : s.N;
    s.wei_line_len = rows_n ? s.N : s.K;
    s.wei_user_line = rows_n ? us[r - 2] : us[r - 1];
  }
  const auto ds = dst.get_strides();
  s.dst_row_stride = ds[r - 2];
  s.dst_elem = dnnl::memory::data_type_size(dst.get_data_type());
  // a fused head merge ([.., H, M, N] written as [.., M, H, N]): oneDNN 3.2's brgemm MatMul takes
  // that destination only as a dense "acbd" block of all heads (one head's rows at stride H x N
  // get gemm:jit), so the chunks are then (outer batches, row block) over all heads, the source
  // rows of each chunk gathered into a thread's own dense buffer
  const int64_t H = r >= 3 ? dd[r - 3] : 1;
  s.heads = H > 1 && ds[r - 3] == s.N && ds[r - 2] == H * s.N && ds[r - 1] == 1;
  if (s.heads) {
    const auto obs = batch_stride(dst, 1);
    if (!obs || (*obs != 0 && *obs != s.M * H * s.N)) return std::nullopt;
    s.H = H;
  } else {
    const auto dbs = batch_stride(dst);
    if (!dbs) return std::nullopt;
    s.dst_batch_stride = *dbs;
  }
  const int64_t units = s.batches / s.H;  // what the chunks cut: batches, or outer batches of all heads

  // the chunks: whole batches in groups when there are many (Swin's windows x heads), else
  // row blocks of whole AMX tiles (16 rows) so that every thread gets chunks_per_thread()
  const int64_t want = int64_t{threads} * (s.heads ? head_chunks_per_thread() : chunks_per_thread());
  int64_t group = 1, rows = s.M;
  if (ops.force_rows > 0) {
    // a fused attention's Q x K^T: P x V's chunks (attn_fused_chunking), written densely
    if (s.heads || ops.force_group < 1 || ops.force_rows > s.M) return std::nullopt;
    group = std::min(ops.force_group, units);
    rows = ops.force_rows;
    s.dense_chunks = true;
  } else if (units >= 2 * want) {
    group = (units + want - 1) / want;
  } else if (units < want) {
    const int64_t per = (s.M + (want + units - 1) / units - 1) / ((want + units - 1) / units);
    rows = std::min(s.M, std::max<int64_t>(16, (per + 15) / 16 * 16));
  }
  s.blocks = (s.M + rows - 1) / rows;
  if ((units + group - 1) / group * s.blocks < 2) return std::nullopt;

  // the step's post-ops over a chunk: the same, a binary operand (a mask row) as a row too
  const auto attr0 = pd.get_primitive_attr();
  const auto po = attr0.get_post_ops();
  dnnl::post_ops sub_po;
  int add_index = -1;
  dnnl::memory::desc add_whole;
  for (int i = 0; i < po.len(); ++i) {
    switch (po.kind(i)) {
      case dnnl::primitive::kind::sum: {
        float scale;
        int32_t zp;
        dt sdt;
        po.get_params_sum(i, scale, zp, sdt);
        sub_po.append_sum(scale, zp, sdt);
        break;
      }
      case dnnl::primitive::kind::eltwise: {
        dnnl::algorithm alg;
        float alpha, beta;
        po.get_params_eltwise(i, alg, alpha, beta);
        sub_po.append_eltwise(alg, alpha, beta);
        break;
      }
      case dnnl::primitive::kind::binary: {
        dnnl::algorithm alg;
        dnnl::memory::desc md;
        po.get_params_binary(i, alg, md);
        const auto ad = md.get_dims();
        if (add_index >= 0 || md.get_inner_nblks() != 0 || (ad.back() != 1 && ad.back() != s.N) ||
            !std::all_of(ad.begin(), ad.end() - 1, [](int64_t v) { return v == 1; }))
          return std::nullopt;  // a mask that is not one row: the whole primitive
        add_index = i;
        add_whole = md;
        sub_po.append_binary(alg, md);  // (re-made per chunk rank below)
        break;
      }
      default:
        return std::nullopt;
    }
  }
  if (add_index >= 0) s.add_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(add_index) | DNNL_ARG_SRC_1;

  // every sub-primitive is created for one thread (make runs under with_threads(1), below)
  auto make = [&](int64_t g, int64_t n) -> std::optional<AttnSplit::Prim> {
    AttnSplit::Prim p;
    p.batches = g;
    p.rows = n;
    const bool three = g > 1 || s.heads || s.dense_chunks;
    const dims wst = {ws[r - 2], ws[r - 1]}, dst2 = {s.dst_row_stride, ds[r - 1]};
    const int64_t h = s.H, slab = s.K * s.N;
    if (s.dense_chunks) {
      // a fused attention's Q x K^T: the thread's dense Q rows and scores buffers
      p.src = dnnl::memory::desc({g, n, s.K}, dt::bf16, dims{n * s.K, s.K, 1});
      p.wei = dnnl::memory::desc({g, s.K, s.N}, dt::bf16, dims{slab, wst[0], wst[1]});
      p.dst = dnnl::memory::desc({g, n, s.N}, dst.get_data_type(), dims{n * s.N, s.N, 1});
      s.slot_src = std::max(s.slot_src, (static_cast<size_t>(g * n * s.K) * sizeof(uint16_t) + 63) / 64 * 64);
      s.slot_dst = std::max(s.slot_dst, (static_cast<size_t>(g * n * s.N) * s.dst_elem + 63) / 64 * 64);
    } else if (s.heads) {
      // g outer batches x H heads x n rows: the thread's dense source and weights buffers, the
      // destination a dense acbd block (rows n of all heads are contiguous in [.., M, H, N])
      p.src = dnnl::memory::desc({g, h, n, s.K}, dt::bf16, dims{h * n * s.K, n * s.K, s.K, 1});
      p.wei = dnnl::memory::desc({g, h, s.K, s.N}, dt::bf16, dims{h * slab, slab, wst[0], wst[1]});
      p.dst = dnnl::memory::desc({g, h, n, s.N}, dst.get_data_type(), dims{n * h * s.N, s.N, h * s.N, 1});
      s.slot_src = std::max(s.slot_src, (static_cast<size_t>(g * h * n * s.K) * sizeof(uint16_t) + 63) / 64 * 64);
      s.slot_wei = std::max(s.slot_wei, (static_cast<size_t>(g * h * slab) * sizeof(uint16_t) + 63) / 64 * 64);
    } else if (three) {
      p.src = dnnl::memory::desc({g, n, s.K}, dt::bf16, dims{s.M * s.K, s.K, 1});
      p.wei = dnnl::memory::desc({g, s.K, s.N}, dt::bf16, dims{s.K * s.N, wst[0], wst[1]});
      p.dst = dnnl::memory::desc({g, n, s.N}, dst.get_data_type(), dims{s.dst_batch_stride, dst2[0], dst2[1]});
    } else {
      p.src = dnnl::memory::desc({n, s.K}, dt::bf16, dims{s.K, 1});
      p.wei = dnnl::memory::desc({s.K, s.N}, dt::bf16, wst);
      p.dst = dnnl::memory::desc({n, s.N}, dst.get_data_type(), dst2);
    }
    dnnl::post_ops ops;
    for (int i = 0; i < sub_po.len(); ++i) {
      if (i == add_index) {
        dnnl::algorithm alg;
        dnnl::memory::desc md;
        sub_po.get_params_binary(i, alg, md);
        const int64_t last = add_whole.get_dims().back();
        p.add = s.heads && !s.dense_chunks ? dnnl::memory::desc({1, 1, 1, last}, add_whole.get_data_type(), dnnl::memory::format_tag::abcd)
                : three ? dnnl::memory::desc({1, 1, last}, add_whole.get_data_type(), dnnl::memory::format_tag::abc)
                        : dnnl::memory::desc({1, last}, add_whole.get_data_type(), dnnl::memory::format_tag::ab);
        ops.append_binary(alg, p.add);
      } else if (sub_po.kind(i) == dnnl::primitive::kind::sum) {
        float scale;
        int32_t zp;
        dt sdt;
        sub_po.get_params_sum(i, scale, zp, sdt);
        ops.append_sum(scale, zp, sdt);
      } else {
        dnnl::algorithm alg;
        float alpha, beta;
        sub_po.get_params_eltwise(i, alg, alpha, beta);
        ops.append_eltwise(alg, alpha, beta);
      }
    }
    dnnl::primitive_attr attr = default_attr();
    attr.set_post_ops(ops);
    try {
      dnnl::matmul::primitive_desc spd(cpu_engine(), p.src, p.wei, p.dst, attr);
      const char* info = spd.impl_info_str();
      if (info == nullptr || std::string(info).rfind("brg", 0) != 0) return std::nullopt;
      p.prim = dnnl::matmul(spd);
      note_primitive(spd);
      s.slot_scratch = std::max(s.slot_scratch, (spd.scratchpad_desc().get_size() + 63) / 64 * 64);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
    return p;
  };
  auto prim_for = [&](int64_t g, int64_t n) -> int {
    for (size_t i = 0; i < s.prims.size(); ++i)
      if (s.prims[i].batches == g && s.prims[i].rows == n) return static_cast<int>(i);
    auto p = with_threads(1, [&] { return make(g, n); });
    if (!p) return -1;
    s.prims.push_back(std::move(*p));
    return static_cast<int>(s.prims.size()) - 1;
  };
  for (int64_t b = 0; b < units; b += group) {
    const int64_t g = std::min(group, units - b);
    for (int64_t r0 = 0; r0 < s.M; r0 += rows) {
      const int pi = prim_for(g, std::min(rows, s.M - r0));
      if (pi < 0) return std::nullopt;
      s.chunks.push_back({pi, b, r0});
    }
  }
  s.threads = threads;
  if (s.blocks > 1 && !s.heads)
    s.slot_wei = (static_cast<size_t>(group * s.K * s.N) * sizeof(uint16_t) + 63) / 64 * 64;
  return s;
}

AttnSplitArgs bind_attn_split(const AttnSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                              const void* src_f32, const void* wei_f32, char* scratch) {
  auto& eng = cpu_engine();
  AttnSplitArgs a;
  a.src_bf16 = static_cast<uint16_t*>(whole.at(DNNL_ARG_SRC).get_data_handle());
  a.wei_bf16 = static_cast<uint16_t*>(whole.at(DNNL_ARG_WEIGHTS).get_data_handle());
  a.dst = static_cast<char*>(whole.at(DNNL_ARG_DST).get_data_handle());
  a.src_f32 = static_cast<const float*>(src_f32);
  a.wei_f32 = static_cast<const float*>(wei_f32);
  void* add = split.add_arg ? whole.at(split.add_arg).get_data_handle() : nullptr;
  a.mems.resize(split.threads);
  a.slot_batch.assign(split.threads, -1);
  for (int slot = 0; slot < split.threads; ++slot) {
    a.streams.emplace_back(eng);
    char* own = scratch + split.threads * split.slot_scratch + slot * split.slot_bytes();
    a.slot_wei.push_back(reinterpret_cast<uint16_t*>(own));
    a.slot_src.push_back(reinterpret_cast<uint16_t*>(own + split.slot_wei));
    a.slot_dst.push_back(own + split.slot_wei + split.slot_src);
    for (const AttnSplit::Prim& p : split.prims) {
      AttnSplitArgs::Mems m;
      m.src = dnnl::memory(p.src, eng, a.src_bf16);
      m.wei = dnnl::memory(p.wei, eng, a.wei_bf16);
      m.dst = dnnl::memory(p.dst, eng, a.dst);
      m.args = {{DNNL_ARG_SRC, m.src}, {DNNL_ARG_WEIGHTS, m.wei}, {DNNL_ARG_DST, m.dst}};
      if (add) m.args.emplace(split.add_arg, dnnl::memory(p.add, eng, add));
      if (split.slot_scratch)
        m.args.emplace(DNNL_ARG_SCRATCHPAD,
                       dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(split.slot_scratch)}, dt::u8,
                                                       dnnl::memory::format_tag::a),
                                    eng, scratch + static_cast<size_t>(slot) * split.slot_scratch));
      a.mems[slot].push_back(std::move(m));
    }
  }
  return a;
}

namespace {

// The f32 weights of batches [b0, b0 + count) into bf16 slabs from y.
void convert_weights(const AttnSplit& split, const AttnSplitArgs& args, int64_t b0, int64_t count, uint16_t* y0) {
  const int64_t slab = split.K * split.N;
  if (split.dense_wei) {
    f32_row_to_bf16(args.wei_f32 + split.wei_user_off[static_cast<size_t>(b0)], y0, count * slab);
    return;
  }
  for (int64_t b = b0; b < b0 + count; ++b) {
    const float* w = args.wei_f32 + split.wei_user_off[static_cast<size_t>(b)];
    uint16_t* y = y0 + (b - b0) * slab;
    for (int64_t l = 0; l < split.wei_lines; ++l)
      f32_row_to_bf16(w + l * split.wei_user_line, y + l * split.wei_line_len, split.wei_line_len);
  }
}

// A chunk of all heads (split.heads): outer batches [o0, o0 + g), rows [r0, r0 + n) of each head.
void run_heads_chunk(const AttnSplit& split, AttnSplitArgs& args, const AttnSoftmax& softmax,
                     const AttnSplit::Chunk& ch, const AttnSplit::Prim& p, int slot) {
  const int64_t M = split.M, K = split.K, H = split.H, n = p.rows, r0 = ch.row0;
  const size_t sl = static_cast<size_t>(slot);
  uint16_t* src = args.slot_src[sl];
  for (int64_t bh = ch.batch * H; bh < (ch.batch + p.batches) * H; ++bh) {
    const int64_t gr = bh * M + r0;  // the first row in the whole source
    uint16_t* y = src + (bh - ch.batch * H) * n * K;
    if (softmax.scores) {
      // a mask's rows: 1, the rows of one head (gr % M = r0), or every row (r0 + n stays inside)
      const float* add = softmax.add ? softmax.add + gr % softmax.add_rows * K : nullptr;
      const float* x = softmax.chunk_scores ? softmax.chunk_scores + (bh - ch.batch * H) * n * K : softmax.scores + gr * K;
      softmax_rows_bf16(x, add, softmax.add_rows, y, 0, n, K);
    } else if (args.src_f32 && split.dense_src) {
      f32_row_to_bf16(args.src_f32 + gr * K, y, n * K);
    } else if (args.src_f32) {
      const float* x = args.src_f32 + split.src_user_off[static_cast<size_t>(bh)];
      for (int64_t m = 0; m < n; ++m) f32_row_to_bf16(x + (r0 + m) * split.src_user_row, y + m * K, K);
    } else {
      std::memcpy(y, args.src_bf16 + gr * K, static_cast<size_t>(n * K) * sizeof(uint16_t));
    }
  }
  const int64_t slab = split.K * split.N;
  uint16_t* wei = args.wei_bf16 + ch.batch * H * slab;
  if (args.wei_f32) {
    wei = args.slot_wei[sl];
    if (args.slot_batch[sl] != ch.batch) {
      convert_weights(split, args, ch.batch * H, p.batches * H, wei);
      args.slot_batch[sl] = ch.batch;
    }
  }
  AttnSplitArgs::Mems& m = args.mems[sl][ch.prim];
  m.src.set_data_handle(src);
  m.wei.set_data_handle(wei);
  m.dst.set_data_handle(args.dst + static_cast<size_t>(ch.batch * M * H * split.N + r0 * H * split.N) * split.dst_elem);
  p.prim.execute(args.streams[sl], m.args);
}

}  // namespace

namespace {

// Chunk c of `split` on thread `slot`.
void run_chunk(const AttnSplit& split, AttnSplitArgs& args, const AttnSoftmax& softmax, int c, int slot) {
  const int64_t M = split.M, K = split.K, slab = split.K * split.N;
  const AttnSplit::Chunk& ch = split.chunks[static_cast<size_t>(c)];
  const AttnSplit::Prim& p = split.prims[static_cast<size_t>(ch.prim)];
  const size_t sl = static_cast<size_t>(slot);
  if (split.heads) {
    run_heads_chunk(split, args, softmax, ch, p, slot);
    return;
  }
  uint16_t* wei = args.wei_bf16 + ch.batch * slab;
  if (split.blocks > 1 && args.wei_f32 != nullptr) {
    // weights in the slot's own buffer, converted once for consecutive blocks of its batches
    wei = args.slot_wei[sl];
    if (args.slot_batch[sl] != ch.batch) {
      convert_weights(split, args, ch.batch, p.batches, wei);
      args.slot_batch[sl] = ch.batch;
    }
  } else if (args.wei_f32) {
    convert_weights(split, args, ch.batch, p.batches, wei);
  }
  if (split.dense_chunks) {
    // a fused attention's Q x K^T: each batch's block of Q rows into the thread's dense buffer,
    // the scores into the thread's own buffer (read by the P x V chunk after it)
    uint16_t* src = args.slot_src[sl];
    const int64_t n = p.rows;
    for (int64_t b = ch.batch; b < ch.batch + p.batches; ++b) {
      const int64_t gr = b * M + ch.row0;
      uint16_t* y = src + (b - ch.batch) * n * K;
      if (args.src_f32 && split.dense_src) {
        f32_row_to_bf16(args.src_f32 + gr * K, y, n * K);
      } else if (args.src_f32) {
        const float* x = args.src_f32 + split.src_user_off[static_cast<size_t>(b)];
        for (int64_t m = 0; m < n; ++m) f32_row_to_bf16(x + (ch.row0 + m) * split.src_user_row, y + m * K, K);
      } else {
        std::memcpy(y, args.src_bf16 + gr * K, static_cast<size_t>(n * K) * sizeof(uint16_t));
      }
    }
    AttnSplitArgs::Mems& m = args.mems[sl][static_cast<size_t>(ch.prim)];
    m.src.set_data_handle(src);
    m.wei.set_data_handle(wei);
    m.dst.set_data_handle(args.slot_dst[sl]);
    p.prim.execute(args.streams[sl], m.args);
    return;
  }
  // the chunk's source rows: one run of rows when it is one batch or whole batches, else each
  // batch's block (a fused attention's P x V, its chunk's scores in the thread's buffer)
  const bool one_run = !softmax.chunk_scores && (p.batches == 1 || p.rows == M);
  for (int64_t b = ch.batch; b < ch.batch + (one_run ? 1 : p.batches); ++b) {
    const int64_t r0 = b * M + ch.row0, n = one_run ? p.batches * p.rows : p.rows;
    if (softmax.chunk_scores) {
      const float* add = softmax.add ? softmax.add + r0 % softmax.add_rows * K : nullptr;
      softmax_rows_bf16(softmax.chunk_scores + (b - ch.batch) * n * K, add, softmax.add_rows, args.src_bf16 + r0 * K,
                        0, n, K);
    } else if (softmax.scores) {
      softmax_rows_bf16(softmax.scores, softmax.add, softmax.add_rows, args.src_bf16, r0, r0 + n, K);
    } else if (args.src_f32 && split.dense_src) {
      f32_row_to_bf16(args.src_f32 + r0 * K, args.src_bf16 + r0 * K, n * K);
    } else if (args.src_f32) {
      for (int64_t bb = b; bb < b + (one_run ? p.batches : 1); ++bb) {
        const float* x = args.src_f32 + split.src_user_off[static_cast<size_t>(bb)];
        for (int64_t m = ch.row0; m < ch.row0 + p.rows; ++m)
          f32_row_to_bf16(x + m * split.src_user_row, args.src_bf16 + (bb * M + m) * K, K);
      }
    }
  }
  AttnSplitArgs::Mems& m = args.mems[sl][static_cast<size_t>(ch.prim)];
  m.src.set_data_handle(args.src_bf16 + (ch.batch * M + ch.row0) * K);
  m.wei.set_data_handle(wei);
  m.dst.set_data_handle(args.dst + static_cast<size_t>(ch.batch * split.dst_batch_stride + ch.row0 * split.dst_row_stride) *
                                       split.dst_elem);
  p.prim.execute(args.streams[sl], m.args);
}

}  // namespace

void run_attn_split(const AttnSplit& split, AttnSplitArgs& args, const AttnSoftmax& softmax, int threads) {
  std::fill(args.slot_batch.begin(), args.slot_batch.end(), -1);  // (new inputs every run)
  run_chunks(static_cast<int>(split.chunks.size()), std::min(threads, split.threads),
             [&](int c, int slot) { run_chunk(split, args, softmax, c, slot); });
}

bool fused_attn_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_FUSED_ATTN");
  return on;
}

std::pair<int64_t, int64_t> attn_fused_chunking(const AttnSplit& pv) {
  if (pv.chunks.empty()) return {0, 0};
  const AttnSplit::Prim& first = pv.prims[static_cast<size_t>(pv.chunks.front().prim)];
  return {first.batches * pv.H, first.rows};
}

bool attn_chunks_match(const AttnSplit& qk, const AttnSplit& pv) {
  if (qk.heads || !qk.dense_chunks || qk.chunks.size() != pv.chunks.size() || qk.M != pv.M || qk.N != pv.K ||
      qk.batches != pv.batches || qk.threads != pv.threads)
    return false;
  for (size_t i = 0; i < qk.chunks.size(); ++i) {
    const AttnSplit::Chunk &a = qk.chunks[i], &b = pv.chunks[i];
    const AttnSplit::Prim &pa = qk.prims[static_cast<size_t>(a.prim)], &pb = pv.prims[static_cast<size_t>(b.prim)];
    if (a.row0 != b.row0 || a.batch != b.batch * pv.H || pa.batches != pb.batches * pv.H || pa.rows != pb.rows)
      return false;
  }
  return true;
}

void run_attn_fused(const AttnSplit& qk, AttnSplitArgs& qk_args, const AttnSplit& pv, AttnSplitArgs& pv_args,
                    const AttnSoftmax& softmax, int threads) {
  std::fill(qk_args.slot_batch.begin(), qk_args.slot_batch.end(), -1);
  std::fill(pv_args.slot_batch.begin(), pv_args.slot_batch.end(), -1);
  run_chunks(static_cast<int>(pv.chunks.size()), std::min(threads, pv.threads), [&](int c, int slot) {
    run_chunk(qk, qk_args, AttnSoftmax{}, c, slot);
    AttnSoftmax own = softmax;
    own.chunk_scores = reinterpret_cast<const float*>(qk_args.slot_dst[static_cast<size_t>(slot)]);
    run_chunk(pv, pv_args, own, c, slot);
  });
}

}  // namespace opforge_cpu
