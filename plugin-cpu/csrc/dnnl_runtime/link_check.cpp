// Linked (never run) by CMakeLists.txt with --no-allow-shlib-undefined against libopforge_dnnl.so.3:
// the reference to dnnl_version() keeps the library in the link, so the linker checks that every
// symbol oneDNN imports resolves in the libraries it lists as DT_NEEDED (see the comment above
// opforge_dnnl_link_check in CMakeLists.txt and csrc/dnnl_runtime/intel_fast_mem.cpp).
#include <oneapi/dnnl/dnnl.h>

int main() {
    const dnnl_version_t* version = dnnl_version();
    return version != nullptr && version->major == 3 ? 0 : 1;
}
