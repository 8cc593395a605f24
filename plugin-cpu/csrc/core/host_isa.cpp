#include "core/host_isa.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <string>

#include "core/env_switch.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {
namespace {

// oneDNN's cpu_isa values are cumulative bit masks: an ISA contains every bit of the ones below it.
bool onednn_allows(dnnl::cpu_isa want) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto w = static_cast<unsigned>(want);
  return (isa & w) == w;
}

#if defined(__x86_64__) && defined(__GNUC__)
// (a static initialiser may run before libgcc's: __builtin_cpu_init first)
bool cpu_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi2");
}
bool cpu_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

}  // namespace

bool host_has_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = cpu_avx512() && onednn_allows(dnnl::cpu_isa::avx512_core);
  return has;
#else
  return false;
#endif
}

bool host_has_avx512_bf16() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has =
      host_has_avx512() && __builtin_cpu_supports("avx512bf16") && onednn_allows(dnnl::cpu_isa::avx512_core_bf16);
  return has;
#else
  return false;
#endif
}

bool host_has_amx() {
  // oneDNN's effective ISA already requires the CPU's AMX bits and the kernel's permission
  // (arch_prctl XCOMP_PERM), and follows ONEDNN_MAX_CPU_ISA
  static const bool has = host_has_avx512_bf16() && onednn_allows(dnnl::cpu_isa::avx512_core_amx);
  return has;
}

bool host_has_avx512_vbmi() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = host_has_avx512() && __builtin_cpu_supports("avx512vbmi");
  return has;
#else
  return false;
#endif
}

bool host_has_avx512_vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = host_has_avx512() && __builtin_cpu_supports("avx512vnni") &&
                          onednn_allows(dnnl::cpu_isa::avx512_core_vnni);
  return has;
#else
  return false;
#endif
}

bool host_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = cpu_avx2_fma() && onednn_allows(dnnl::cpu_isa::avx2);
  return has;
#else
  return false;
#endif
}

bool isa_clones_avx2_fma() {
  static const bool on = env_switch_on("OPFORGE_CPU_AVX2_FMA");
  return on;
}

const char* isa_clones_build() {
  if (host_has_avx512()) return "avx512";
  if (host_has_avx2_fma()) return isa_clones_avx2_fma() ? "avx2_fma" : "avx2";
  return "baseline";
}

const char* host_isa_name() {
  if (host_has_avx512_bf16()) return "avx512_bf16";
  if (host_has_avx512()) return "avx512";
  if (host_has_avx2_fma()) return "avx2";
  return "baseline";
}

}  // namespace opforge_cpu
