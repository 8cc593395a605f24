// libopforge_intel_mem.so: the two functions of Intel's compiler runtime that the TBB build of
// oneDNN (PyPI onednn-cpu-tbb 2023.2.0, compiled with Intel's compiler) calls.
//
// Why this exists: that libdnnl.so.3 lists libimf.so and libintlc.so.5 as DT_NEEDED, which come
// only in the wheel intel-cmplr-lib-rt (41 MB download, 130 MB installed). Of everything those
// two libraries export, oneDNN imports only `_intel_fast_memcpy` and `_intel_fast_memset` (the
// compiler's replacements for memcpy/memset calls); its math imports (expf, erff, tanhf, powf,
// ...) are the C library's names and already bind to glibc's libm in a Python process
// (`LD_DEBUG=bindings` on stop 22's build: every one of them resolved to libm.so.6, not libimf).
// The build (CMakeLists.txt) therefore removes those two DT_NEEDED entries from our private copy
// libopforge_dnnl.so.3, adds libm.so.6 and this library in their place, and links a check
// program with --no-allow-shlib-undefined, so a oneDNN that imports anything else from Intel's
// runtime fails the build with the symbol's name instead of failing at the first call.
//
// Both functions have the C library's signatures and contracts; glibc's memcpy/memset dispatch
// on the CPU themselves (AVX2/AVX-512/ERMS), which is what Intel's versions do too.
#include <cstddef>
#include <cstring>

extern "C" {

__attribute__((visibility("default"))) void* _intel_fast_memcpy(void* dst, const void* src,
                                                                 std::size_t n) {
    return std::memcpy(dst, src, n);
}

__attribute__((visibility("default"))) void* _intel_fast_memset(void* dst, int value,
                                                                 std::size_t n) {
    return std::memset(dst, value, n);
}

}  // extern "C"
