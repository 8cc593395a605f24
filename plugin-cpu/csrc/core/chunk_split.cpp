// Planning helpers, binding and running of a primitive split into chunks on one-thread
// sub-primitives (chunk_split.hpp), shared by the pixel, row and MatMul row splits.
#include "core/chunk_split.hpp"

#include <algorithm>

#include "core/chunk_pool.hpp"
#include "core/dnnl_util.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "core/primitive_log.hpp"
#include "core/threading.hpp"

namespace opforge_cpu {

bool chunk_splits_on_this_host() {
  // The splits were adopted on AMX hosts, where oneDNN's 2-thread brgconv_1x1 / brgemm ran slower
  // than one thread (two AMX units at once, a worker asleep at 300 spins). Without AMX the
  // avx512_core_bf16 kernels split well by themselves: asking oneDNN's ISA keeps the Sapphire
  // Rapids behaviour as it was.
  static const bool on = !env_switch_on("OPFORGE_CPU_SPLIT_HOST_RULE") || host_has_amx();
  return on;
}

int add_chunk_primitive(ChunkSplit& split, const dnnl::primitive_desc& sub, const ChunkDescs& descs,
                        const dnnl::memory::desc& wei, const std::function<bool(const std::string& impl)>& impl_ok) {
  const char* info = sub.impl_info_str();
  if (info == nullptr || !impl_ok(info) || sub.weights_desc(0) != wei) return -1;
  split.prims.emplace_back(sub);
  note_primitive(sub);
  split.src.push_back(descs.src);
  split.dst.push_back(descs.dst);
  split.residual.push_back(descs.residual);
  split.slot_scratch = std::max(split.slot_scratch, (sub.scratchpad_desc().get_size() + 63) / 64 * 64);
  return static_cast<int>(split.prims.size()) - 1;
}

namespace {

// split_units with `want` chunks, or none; `threads` left for the caller to set.
std::optional<ChunkSplit> split_units_into(int64_t units, int64_t want, size_t src_unit_bytes, size_t dst_unit_bytes,
                                           size_t residual_unit_bytes, const dnnl::memory::desc& wei,
                                           const UnitChunkDescs& descs, const UnitChunkMaker& make) {
  const int64_t per = (units + want - 1) / want;
  const int64_t chunk = std::min(units, (per + 15) / 16 * 16);
  const auto brg = [](const std::string& impl) { return impl.rfind("brg", 0) == 0; };
  ChunkSplit split;
  std::vector<int64_t> sizes;  // the distinct chunk sizes, one sub-primitive each (prims[i] for sizes[i])
  // sub-primitives for one thread (a primitive created for more would fork inside the chunk pool)
  const bool made = with_threads(1, [&]() -> bool {
    try {
      for (int64_t first = 0; first < units; first += chunk) {
        const int64_t n = std::min(chunk, units - first);
        auto at = std::find(sizes.begin(), sizes.end(), n);
        if (at == sizes.end()) {
          const ChunkDescs d = descs(n);
          if (add_chunk_primitive(split, make(d), d, wei, brg) < 0) return false;
          sizes.push_back(n);
          at = sizes.end() - 1;
        }
        const size_t off = static_cast<size_t>(first);
        split.chunks.push_back({static_cast<int>(at - sizes.begin()), off * src_unit_bytes, off * dst_unit_bytes,
                                off * residual_unit_bytes});
      }
    } catch (const dnnl::error&) {
      return false;  // no such sub-primitive: oneDNN's own split
    }
    return true;
  });
  if (!made || split.chunks.size() < 2) return std::nullopt;
  return split;
}

}  // namespace

std::optional<ChunkSplit> split_units(int64_t units, int threads, int64_t most, size_t src_unit_bytes,
                                      size_t dst_unit_bytes, size_t residual_unit_bytes, const dnnl::memory::desc& wei,
                                      const UnitChunkDescs& descs, const UnitChunkMaker& make) {
  for (int64_t want : {most, int64_t{threads}}) {
    auto split = split_units_into(units, want, src_unit_bytes, dst_unit_bytes, residual_unit_bytes, wei, descs, make);
    if (split) {
      split->threads = threads;
      return split;
    }
    if (want == threads) break;
  }
  return std::nullopt;
}

ChunkSplitArgs bind_chunk_split(const ChunkSplit& split, const std::unordered_map<int, dnnl::memory>& whole,
                                int residual_arg, char* scratch) {
  auto& eng = cpu_engine();
  char* src = static_cast<char*>(whole.at(DNNL_ARG_SRC).get_data_handle());
  char* dst = static_cast<char*>(whole.at(DNNL_ARG_DST).get_data_handle());
  char* res = residual_arg ? static_cast<char*>(whole.at(residual_arg).get_data_handle()) : nullptr;
  ChunkSplitArgs a;
  a.args.resize(split.threads);
  for (int slot = 0; slot < split.threads; ++slot) {
    a.streams.emplace_back(eng);
    for (const ChunkSplit::Chunk& c : split.chunks) {
      std::unordered_map<int, dnnl::memory> m;
      for (const auto& [key, mem] : whole)
        if (key != DNNL_ARG_SRC && key != DNNL_ARG_DST && key != DNNL_ARG_SCRATCHPAD && key != residual_arg) m.emplace(key, mem);
      m.emplace(DNNL_ARG_SRC, dnnl::memory(split.src[c.prim], eng, src + c.src_at));
      m.emplace(DNNL_ARG_DST, dnnl::memory(split.dst[c.prim], eng, dst + c.dst_at));
      if (res) m.emplace(residual_arg, dnnl::memory(split.residual[c.prim], eng, res + c.residual_at));
      if (split.slot_scratch)
        m.emplace(DNNL_ARG_SCRATCHPAD,
                  dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(split.slot_scratch)}, dnnl::memory::data_type::u8,
                                                  dnnl::memory::format_tag::a),
                               eng, scratch + static_cast<size_t>(slot) * split.slot_scratch));
      a.args[slot].push_back(std::move(m));
    }
  }
  return a;
}

void run_chunk_split(const ChunkSplit& split, ChunkSplitArgs& args, int threads) {
  run_chunks(static_cast<int>(split.chunks.size()), std::min(threads, split.threads), [&](int c, int slot) {
    split.prims[split.chunks[c].prim].execute(args.streams[slot], args.args[slot][c]);
  });
}

}  // namespace opforge_cpu
