#pragma once

// Loops the compiler vectorises, built for AVX-512, AVX2 and baseline x86-64 (the module itself
// builds for baseline) and picked at run time by host_isa.hpp. GCC's target_clones did this
// before, but its load-time resolver asks cpuid only, so under ONEDNN_MAX_CPU_ISA=AVX2 (the
// emulated AVX2 host) our loops still ran AVX-512 while oneDNN ran AVX2.
//
// OPFORGE_ISA_CLONES(storage, avx512_target, name, impl, params, args) defines
//   storage void name params
// which runs `impl args` compiled four times: with target(avx512_target) where host_has_avx512();
// with target("avx2,fma") where host_has_avx2_fma(); with target("avx2") there too when
// OPFORGE_CPU_AVX2_FMA=0; else for the baseline. The AVX-512 targets are the strings
// target_clones used, so that build compiles to the code it did before (relu.cpp's
// arch=skylake-avx512 became its ISA list: an arch= target cannot inline `impl`).
// The AVX2 build contracts a * b + c into FMA as the AVX-512 one always did (AVX512F has FMA):
// target_clones' "avx2" left it out, and the softmax rows' exp polynomial ran 1.33x slower for
// it (whisper-sized rows under the cap, 49 -> 37 ms); it also gives AVX2 the AVX-512 roundings.
// `storage` is empty or `static`; `impl` is usually an always_inline function the clones inline.
#include "core/host_isa.hpp"

namespace opforge_cpu {
// Whether an AVX2 host runs the "avx2,fma" builds (OPFORGE_CPU_AVX2_FMA=0: the "avx2" ones,
// target_clones' code), read once.
bool isa_clones_avx2_fma();
// Which build of the loops runs here: "avx512", "avx2_fma", "avx2" or "baseline".
const char* isa_clones_build();
}  // namespace opforge_cpu

#define OPFORGE_ISA_CLONES(storage, avx512_target, name, impl, params, args) \
  __attribute__((target(avx512_target))) static void name##_isa_avx512 params { impl args; } \
  __attribute__((target("avx2,fma"))) static void name##_isa_avx2_fma params { impl args; } \
  __attribute__((target("avx2"))) static void name##_isa_avx2 params { impl args; } \
  static void name##_isa_baseline params { impl args; } \
  storage void name params { \
    if (::opforge_cpu::host_has_avx512()) return name##_isa_avx512 args; \
    if (::opforge_cpu::host_has_avx2_fma()) { \
      if (::opforge_cpu::isa_clones_avx2_fma()) return name##_isa_avx2_fma args; \
      return name##_isa_avx2 args; \
    } \
    name##_isa_baseline args; \
  }
