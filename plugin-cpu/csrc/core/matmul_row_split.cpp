// bf16 MatMuls with constant weights over row chunks that threads claim (chunk_pool.cpp), not
// oneDNN's own 2-thread split.
//
// In the models (same build, this switch off / on, bf16 at 2 threads, quiet: docs/kernel-library.md
// "bf16 MatMuls with constant weights at 2 threads") deit's, whisper's and vit's projections ran
// 0.65-0.90x per node, the models 0.77-0.91x; a C++ chain of deit's projections alone scales
// under oneDNN's split too (0.80 of one thread) and the chunks gain only a few % there. The
// worker enters a step's region 7-9 us after the caller (it sleeps between steps:
// GOMP_SPINCOUNT=300, _loader.py); a static split waits for its fixed half, chunks claimed from
// a counter let it take fewer. Wide weights lose (max_weight_bytes). A row of the dense
// [M, K] source gives the same row of the [M, N] destination with the same weights, bias and
// post-ops (a residual added in place, GELU, a gated FFN's operand chunked the same way), so the
// outputs are the bytes of the unsplit primitive.
#include "core/matmul_row_split.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/env_switch.hpp"

namespace opforge_cpu {

namespace {

// Rows a chunk at least: two of brgemm's 16-row AMX tiles (a shorter chunk streams the whole
// weight matrix for a few rows).
constexpr int64_t kMinRows = 32;

// OPFORGE_CPU_MATMUL_SPLIT=0: oneDNN's own split, for same-build A/B measurements.
bool split_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_MATMUL_SPLIT");
  return on;
}

// Chunks a thread (2, as the convolution's pixel split). OPFORGE_CPU_MATMUL_SPLIT_CHUNKS
// overrides it, for measuring.
int64_t chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_MATMUL_SPLIT_CHUNKS", 2));
  return value;
}

// Packed weights of more bytes than this keep oneDNN's split: every chunk reads the whole weight
// matrix, so they must stay in each core's L2 (2 MB here). hf_distilbert bf16 at 2 threads,
// per-node medians, same build off/on (load ~5, and again under chrt): 768 x 768 weights (1.2 MB)
// 1.05-1.29x and 768 x 3072 (4.7 MB) 1.17-1.65x slower split, deit's 192 x 576 / 192 x 768
// (0.2-0.3 MB) 0.77-0.90x (under chrt). OPFORGE_CPU_MATMUL_SPLIT_MAX_WEIGHT_KB overrides it
// (0: no limit), for measuring.
int64_t max_weight_bytes() {
  static const int64_t value = std::max<int64_t>(0, env_int("OPFORGE_CPU_MATMUL_SPLIT_MAX_WEIGHT_KB", 512)) * 1024;
  return value;
}

bool dense_rows(const dnnl::memory::desc& md) {
  if (md.get_ndims() != 2 || md.get_inner_nblks() != 0) return false;
  return md == dnnl::memory::desc(md.get_dims(), md.get_data_type(), dnnl::memory::format_tag::ab);
}

dnnl::memory::desc rows_md(const dnnl::memory::desc& whole, int64_t rows) {
  return dnnl::memory::desc({rows, whole.get_dims()[1]}, whole.get_data_type(), dnnl::memory::format_tag::ab);
}

size_t row_bytes(const dnnl::memory::desc& md) {
  return dnnl::memory::data_type_size(md.get_data_type()) * static_cast<size_t>(md.get_dims()[1]);
}

}  // namespace

std::optional<ChunkSplit> plan_row_split(const dnnl::matmul::primitive_desc& pd, const dnnl::memory::desc& gate,
                                         int threads, const RowMatMulMaker& make) {
  if (threads <= 1 || !split_enabled() || !chunk_splits_on_this_host()) return std::nullopt;
  const auto src = pd.src_desc(), dst = pd.dst_desc(), wei = pd.weights_desc();
  if (src.get_data_type() != dnnl::memory::data_type::bf16 || !dense_rows(src) || !dense_rows(dst)) return std::nullopt;
  if (wei.get_ndims() != 2) return std::nullopt;
  const bool has_gate = gate.get_ndims() != 0;
  if (has_gate && (!dense_rows(gate) || gate.get_dims() != dst.get_dims())) return std::nullopt;
  const int64_t rows = src.get_dims()[0];
  if (rows < kMinRows * 2) return std::nullopt;
  if (max_weight_bytes() > 0 && static_cast<int64_t>(wei.get_size()) > max_weight_bytes()) return std::nullopt;
  // chunks_per_thread() chunks a thread (fewer when a chunk would get under kMinRows), rounded
  // up to whole 16-row tiles; when brgemm wants another weights layout for chunks that short,
  // one chunk a thread
  const int64_t most = std::max<int64_t>(threads, std::min<int64_t>(int64_t{threads} * chunks_per_thread(), rows / kMinRows));
  // (the gate operand is cut as the destination)
  return split_units(
      rows, threads, most, row_bytes(src), row_bytes(dst), has_gate ? row_bytes(gate) : 0, wei,
      [&](int64_t n) {
        return ChunkDescs{rows_md(src, n), rows_md(dst, n), has_gate ? rows_md(gate, n) : dnnl::memory::desc()};
      },
      [&](const ChunkDescs& d) -> dnnl::primitive_desc { return make(d.src, wei, d.dst, d.residual); });
}

}  // namespace opforge_cpu
