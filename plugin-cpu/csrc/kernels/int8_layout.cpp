// See int8_layout.hpp.
#include "kernels/int8_layout.hpp"
#include "core/host_isa.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/env_switch.hpp"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OPFORGE_LOOKUP_VBMI 1
#endif

namespace opforge_cpu {

std::vector<int> dense_order(const dnnl::memory::desc& md) {
  const int rank = md.get_ndims();
  if (md.get_format_kind() != dnnl::memory::format_kind::blocked || md.get_inner_nblks() != 0) return {};
  const auto dims = md.get_dims();
  if (md.get_padded_dims() != dims) return {};
  const auto strides = md.get_strides();
  // the unit axes first (where they sit changes no offset), then the others outermost first:
  // larger strides first
  std::vector<int> order, sized;
  for (int a = 0; a < rank; ++a) (dims[a] == 1 ? order : sized).push_back(a);
  std::stable_sort(sized.begin(), sized.end(), [&](int a, int b) { return strides[a] > strides[b]; });
  order.insert(order.end(), sized.begin(), sized.end());
  // dense: each non-unit axis' stride is the product of the sizes inside it
  int64_t expect = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (dims[order[i]] == 1) continue;
    if (strides[order[i]] != expect) return {};
    expect *= dims[order[i]];
  }
  return order;
}

std::vector<int> channels_last_order(size_t rank) {
  std::vector<int> o(rank);
  std::iota(o.begin(), o.end(), 0);
  if (rank >= 3) {
    o.erase(o.begin() + 1);
    o.push_back(1);
  }
  return o;
}

dnnl::memory::desc ordered_md(DType t, const Shape& shape, const std::vector<int>& order) {
  if (shape.empty() || order.size() != shape.size()) return plain_md(t, shape);
  const Shape& dims = shape;
  dnnl::memory::dims strides(dims.size());
  int64_t s = 1;
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    strides[order[i]] = s;
    s *= dims[order[i]];
  }
  return dnnl::memory::desc(to_dims(dims), dnnl_type(t), strides);
}

bool same_dense_layout(const Shape& shape, const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size()) return false;
  std::vector<int> ka, kb;  // the non-unit axes in each order
  for (int x : a)
    if (shape[x] != 1) ka.push_back(x);
  for (int x : b)
    if (shape[x] != 1) kb.push_back(x);
  return ka == kb;
}

#ifdef OPFORGE_LOOKUP_VBMI
namespace {
// Four 64-byte quarters of the table; vpermi2b picks by the low 7 bits of each byte from two of
// them, the top bit chooses between the two halves.
#define OPFORGE_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))
OPFORGE_VBMI inline __m512i lookup64(__m512i v, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}
OPFORGE_VBMI void lookup_vbmi(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, lookup64(_mm512_loadu_si512(x + i), t0, t1, t2, t3));
  if (i < n) {
    const __mmask64 k = ~0ULL >> (64 - (n - i));
    _mm512_mask_storeu_epi8(y + i, k, lookup64(_mm512_maskz_loadu_epi8(k, x + i), t0, t1, t2, t3));
  }
}
// (cpuid and oneDNN's effective ISA: ONEDNN_MAX_CPU_ISA=AVX2 emulates an AVX2 host; host_isa.hpp)
bool has_vbmi() {
  return host_has_avx512_vbmi();
}

// AVX2 has no byte permute over more than 16 entries: pshufb looks up 16 (by the low nibble of
// each index byte) and writes 0 where the index byte has its top bit set. So the 256 entries are
// 16 rows of 16, looked up one row after the other, and the top bit masks the rows a byte must
// not take: two index chains, one for the bytes below 128 (rows 0-7) and one for those at or
// above (rows 8-15, the index with its top bit flipped). Each chain subtracts 16 with signed
// saturation per row, so a byte's index goes negative (top bit set) after its own row h and
// stays negative (saturation, no wrap back to a valid index), and the other half's bytes are
// negative from the start. A byte thus takes rows 0..h (8..h) of the steps table, whose XOR is
// row h of the values (ByteTable::steps). 3 operations a row (subtract, shuffle, XOR), 48 for 32
// bytes, against 2 loads and a store a byte for the scalar loop.
#define OPFORGE_AVX2_TARGET __attribute__((target("avx2")))
OPFORGE_AVX2_TARGET __attribute__((always_inline)) inline __m256i lookup32(__m256i v, const uint8_t* steps) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256i lo = v, hi = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < 8; ++k) {
    const __m256i row_lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(steps + 16 * k)));
    const __m256i row_hi =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(steps + 128 + 16 * k)));
    acc = _mm256_xor_si256(acc, _mm256_shuffle_epi8(row_lo, lo));
    acc = _mm256_xor_si256(acc, _mm256_shuffle_epi8(row_hi, hi));
    lo = _mm256_subs_epi8(lo, sixteen);
    hi = _mm256_subs_epi8(hi, sixteen);
  }
  return acc;
}
// The whole 32-byte blocks of [0, n); returns where the rest (0-31 bytes) starts. The rest goes
// through the scalar loop: a 32-byte vector costs about 50 operations whatever its fill, so a
// short run (unet_small's last Concat, few channels a pixel) is cheaper byte by byte: its four
// Concats took 1.41 ms with the rest through a 32-byte buffer, 0.92 all scalar, 0.75 this way.
OPFORGE_AVX2_TARGET int64_t lookup_avx2(const uint8_t* steps, const uint8_t* x, uint8_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {  // two independent vectors a step: the chains are 8 rows deep
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), lookup32(a, steps));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i + 32), lookup32(b, steps));
  }
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        lookup32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), steps));
  return i;  // nothing read or written past x[n-1], y[n-1]
}
bool lookup_avx2_on() {
  static const bool on = host_has_avx2_fma() && env_switch_on("OPFORGE_CPU_INT8_LOOKUP_AVX2");
  return on;
}
}  // namespace
#endif

void ByteTable::set(const uint8_t* table) {
  std::memcpy(values, table, 256);
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j)
      steps[16 * k + j] = k == 0 || k == 8 ? values[16 * k + j] : static_cast<uint8_t>(values[16 * k + j] ^ values[16 * (k - 1) + j]);
}

const char* lookup_isa_suffix() {
#ifdef OPFORGE_LOOKUP_VBMI
  if (has_vbmi()) return ":avx512";
  if (lookup_avx2_on()) return ":avx2";  // an AVX-512 host without VBMI (Skylake-SP) runs it too
#endif
  return "";
}

bool int8_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  return host_has_avx512();
#else
  return false;
#endif
}

const char* int8_isa_suffix() { return int8_avx512() ? ":avx512" : ""; }

void lookup_bytes(const ByteTable& table, const uint8_t* x, uint8_t* y, int64_t n) {
  int64_t i = 0;
#ifdef OPFORGE_LOOKUP_VBMI
  if (has_vbmi()) return lookup_vbmi(table.values, x, y, n);
  if (lookup_avx2_on()) i = lookup_avx2(table.steps, x, y, n);
#endif
  for (; i < n; ++i) y[i] = table.values[x[i]];
}

void StagedInputs::add(const TensorInfo& info, const std::vector<int>& order) {
  Input in;
  in.user = md_of(info);
  std::vector<int> have(info.shape.size());
  std::iota(have.begin(), have.end(), 0);
  if (info.blocked) have = dense_order(in.user);  // empty when not dense: always reordered
  if ((info.blocked && have.empty()) || !same_dense_layout(info.shape, have, order)) {
    in.want = ordered_md(info.dtype, info.shape, order);
    in.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), in.user, cpu_engine(), in.want));
    in.staged = true;
    in.offset = scratch_;
    scratch_ += (in.want.get_size() + 63) / 64 * 64;
  }
  inputs_.push_back(std::move(in));
}

void StagedInputs::bind(Bound& b, const TensorView* in, char* scratch) const {
  b.reorders.assign(inputs_.size(), {});
  b.data.assign(inputs_.size(), nullptr);
  auto& eng = cpu_engine();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& x = inputs_[i];
    if (!x.staged) {
      b.data[i] = in[i].data;
      continue;
    }
    b.data[i] = scratch + x.offset;
    b.reorders[i] = {{DNNL_ARG_FROM, dnnl::memory(x.user, eng, in[i].data)},
                     {DNNL_ARG_TO, dnnl::memory(x.want, eng, scratch + x.offset)}};
  }
}

void StagedInputs::run(RunContext& ctx, Bound& b) const {
  if (!any()) return;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].staged) inputs_[i].reorder.execute(*ctx.stream, b.reorders[i]);
  ctx.stream->wait();
}

namespace {
struct StagedBound : Bound {
  StagedInputs::Bound staged;
};
}  // namespace

std::unique_ptr<Bound> StagedKernel::bind(const TensorView* in, size_t, const TensorView*, size_t, void* scratch) {
  auto b = std::make_unique<StagedBound>();
  staged_.bind(b->staged, in, static_cast<char*>(scratch));
  return b;
}

bool StagedKernel::channels_last_io(NodeDesc& n) {
  staged_.add(n.in(0), channels_last_order(4));
  const bool channels_last = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
  const std::vector<int> order = channels_last ? channels_last_order(4) : std::vector<int>{0, 1, 2, 3};
  n.outputs[0].md = ordered_md(n.outputs[0].dtype, n.outputs[0].shape, order);
  n.outputs[0].blocked = channels_last;
  return channels_last;
}

void StagedKernel::run(RunContext& ctx, const TensorView*, TensorView* out, Bound* bound) {
  auto* b = static_cast<StagedBound*>(bound);
  staged_.run(ctx, b->staged);
  compute(ctx, b->staged.data, out);
}

}  // namespace opforge_cpu
