// The recurrence product of a small batch, c = a x B with a only a few rows (the hidden state of
// a text model at batch 1 or 2) and B a constant weight matrix (R^T of one direction), as a hand
// vectorised matrix-vector product over B packed once into column panels.
//
// Why not oneDNN: at batch 1 each step is a 1 x H x G*H product that streams R (1 MiB for an
// LSTM with hidden 256) from L2 and does nothing else. oneDNN 3.2 spends ~30 us a step on it
// (its RNN primitive's brgemm:avx512_core and a matmul primitive alike: call overhead, a blocked
// layout made for larger batches), where reading R from L2 takes ~6 us. Here a panel's columns
// are contiguous for every k, so the loop over k streams the panel in order with 8 independent
// accumulators, and each weight is loaded once for all rows of a.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace opforge_cpu {

class PanelGemv {
 public:
  PanelGemv() = default;
  // B(k, n) = b[k * ks + n * ns] for k < K, n < N; copied and packed here, never read again.
  // bf16: B and each run's a are rounded to bf16 (to nearest even), products accumulated in
  // f32 by AVX512_BF16's dot-product instruction (INFERENCE_PRECISION_HINT=bf16: half the
  // bytes of R to stream per step); on a host without it, f32 as if bf16 were false.
  PanelGemv(const float* b, int64_t K, int64_t N, int64_t ks, int64_t ns, bool bf16 = false);
  // Dynamically quantized (com.microsoft DynamicQuantizeLSTM, what ONNX Runtime's quantize_dynamic
  // makes of an LSTM): column n of B holds whole multiples q * col_scale[n], q in [-128, 127],
  // checked here exactly (f32(q * scale) == B(k, n) for every element). Each run then quantizes
  // a to u8 as ONNX Runtime does (one scale and zero point over all M x K values: ONNX's
  // DynamicQuantizeLinear) and multiplies on the integers: u8 x s8 dot products into s32
  // (vpdpbusd), the zero point taken out as acc - zp * sum_k q, times scale_a * col_scale[n].
  // A quarter of f32's bytes of R to stream per step. A host with AVX2 but no AVX512_VNNI
  // widens both sides to s16 (vpmaddwd: u8 x s8 pairs by vpmaddubsw would saturate): the same
  // integer sums, half of f32's bytes. Where B is not such multiples, K is too large for an exact
  // s32 sum, or the host has no AVX2, B is packed as the f32 constructor packs it (int8() is
  // false) and runs take a as it is.
  PanelGemv(const float* b, int64_t K, int64_t N, int64_t ks, int64_t ns, const float* col_scale);

  // c[m, n] = sum_k a[m * lda + k] * B(k, n) for m < M, n < N; c rows ldc apart.
  void run(const float* a, int64_t lda, int64_t M, float* c, int64_t ldc) const;

  // the kernel's instruction set: avx512_vnni_u8s8 or avx2_u8s8_s16 (int8), avx512_bf16,
  // avx512, avx2 or x86-64
  const char* isa_name() const;
  bool int8() const { return isa_ == Isa::avx512_vnni || isa_ == Isa::avx2_s16; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }

 private:
  void pack_f32(const float* b, int64_t ks, int64_t ns, bool bf16);
  bool pack_s8(const float* b, int64_t ks, int64_t ns, const float* col_scale);

  int64_t K_ = 0, N_ = 0;
  enum class Isa { baseline, avx2, avx512, avx512_bf16, avx512_vnni, avx2_s16 };
  // int8: per column, the scale and the sum over k of q (for the activations' zero point)
  std::vector<float> col_scale_;
  std::vector<int32_t> col_sum_;
  Isa isa_ = Isa::baseline;  // chosen when packing: the panel width depends on it
  int width_ = 0;            // columns per panel
  // f32 [panels][K][width], or for avx512_bf16 bf16 pairs (k even in the low half) as uint32
  // [panels][ceil(K / 2)][width], or for avx512_vnni s8 quads (4 consecutive k of a column) as
  // int32 [panels][ceil(K / 4)][width], for avx2_s16 s16 pairs as int32 [panels][ceil(K / 2)][width]
  std::unique_ptr<float[], void (*)(void*)> packed_{nullptr, nullptr};
};

}  // namespace opforge_cpu
