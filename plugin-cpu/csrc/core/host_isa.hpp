#pragma once

// Which instruction sets the hand-written kernels may use. Each answer is the CPU's (cpuid) AND
// oneDNN's effective ISA: ONEDNN_MAX_CPU_ISA=AVX2 emulates an AVX2 host for the whole plugin, so a
// kernel that asked only cpuid would run AVX-512 code under the cap while oneDNN ran AVX2 and the
// emulated measurement would flatter us. Every hand-written dispatch asks here; each answer is
// computed once (oneDNN fixes its ISA at its first query, so it cannot change afterwards).
namespace opforge_cpu {

// AVX-512 F/BW/VL/DQ with FMA and BMI2 (every avx512_core CPU), oneDNN at avx512_core or above.
bool host_has_avx512();
// host_has_avx512() plus AVX512_BF16 (vcvtneps2bf16, vdpbf16ps), oneDNN at avx512_core_bf16 or above.
bool host_has_avx512_bf16();
// oneDNN's effective ISA includes AMX (avx512_core_amx: AMX-TILE/AMX-BF16/AMX-INT8 in the CPU, the
// OS's permission, no ONEDNN_MAX_CPU_ISA cap below it). Not used to run AMX code of our own: a
// rule tuned on the AMX hosts of stops 11-17 asks it to keep their behaviour where it holds.
bool host_has_amx();
// host_has_avx512() plus AVX512_VBMI (vpermi2b byte lookups).
bool host_has_avx512_vbmi();
// host_has_avx512() plus AVX512_VNNI (vpdpbusd: u8 x s8 dot products of 4 into s32 lanes), oneDNN
// at avx512_core_vnni or above.
bool host_has_avx512_vnni();
// AVX2 with FMA (8-lane float FMA), oneDNN at avx2 or above.
bool host_has_avx2_fma();
// The widest of the above, for impl names and the benchmark: "avx512_bf16", "avx512", "avx2" or "baseline".
const char* host_isa_name();

}  // namespace opforge_cpu
