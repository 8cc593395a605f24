// The channels-last concat (kernels/concat.cpp ChannelsLastConcat: pixel by pixel, each input's
// channels in turn, zmm copies with one masked tail) against oneDNN 3.2's concat (simple:any) of
// the same bf16 nhwc tensors along the channels, alternating in one process: median us of IT runs
// (default 200); the outputs must be the same bytes. Per-shape numbers in docs/kernel-library.md.
//   g++ -O2 -fopenmp -std=c++17 -mavx512f -mavx512bw -mbmi2 benchmarks/concat_nhwc_bench.cpp
//       -I<venv>/include -L<venv>/lib -ldnnl -Wl,-rpath,<venv>/lib -o concat_bench
//   ./concat_bench H W threads C1 C2 [C3 ...]     (e.g. UNet: 256 256 1 16 16; DenseNet: 56 56 2 64 32)
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// (as kernels/concat.cpp copy_pixel)
static inline void copy_pixel(char* d, const char* s, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
  if (i < n) {
    const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(n - i));
    _mm512_mask_storeu_epi8(d + i, m, _mm512_maskz_loadu_epi8(m, s + i));
  }
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s H W threads C1 C2 [C3 ...]\n", argv[0]);
    return 2;
  }
  const int64_t H = atoi(argv[1]), W = atoi(argv[2]);
  const int thr = atoi(argv[3]);
  std::vector<int64_t> cs;
  for (int i = 4; i < argc; ++i) cs.push_back(atoi(argv[i]));
  int64_t ct = 0;
  for (auto c : cs) ct += c;
  omp_set_num_threads(thr);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::vector<memory::desc> srcs;
  std::vector<memory> sm;
  std::vector<const char*> xs;
  for (auto c : cs) {
    srcs.emplace_back(memory::dims{1, c, H, W}, dt::bf16, tag::nhwc);
    sm.emplace_back(srcs.back(), eng);
    auto* p = static_cast<uint16_t*>(sm.back().get_data_handle());
    for (int64_t i = 0; i < c * H * W; ++i) p[i] = static_cast<uint16_t>(i * 7 + c);
    xs.push_back(static_cast<const char*>(sm.back().get_data_handle()));
  }
  concat::primitive_desc pd(eng, memory::desc({1, ct, H, W}, dt::bf16, tag::nhwc), 1, srcs);
  std::printf("oneDNN: %s\n", pd.impl_info_str());
  memory ym(pd.dst_desc(), eng);
  std::vector<uint16_t> y2(static_cast<size_t>(ct * H * W));
  concat cp(pd);
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < sm.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = sm[i];
  args[DNNL_ARG_DST] = ym;
  auto run_onednn = [&] {
    cp.execute(s, args);
    s.wait();
  };
  const int64_t P = H * W;
  auto run_own = [&] {
    char* y = reinterpret_cast<char*>(y2.data());
    const int chunks = thr > 1 ? 4 * thr : 1;  // (the kernel claims them on run_chunks)
#pragma omp parallel for num_threads(thr) schedule(dynamic, 1)
    for (int c = 0; c < chunks; ++c)
      for (int64_t p = P * c / chunks; p < P * (c + 1) / chunks; ++p) {
        char* yp = y + p * ct * 2;
        for (size_t i = 0; i < cs.size(); ++i) {
          copy_pixel(yp, xs[i] + p * cs[i] * 2, cs[i] * 2);
          yp += cs[i] * 2;
        }
      }
  };
  run_onednn();
  run_own();
  if (std::memcmp(ym.get_data_handle(), y2.data(), y2.size() * 2) != 0) std::printf("outputs differ\n");
  const int it = std::getenv("IT") ? atoi(std::getenv("IT")) : 200;
  std::vector<double> t1, t2;
  for (int i = 0; i < it; ++i) {
    const double a = now();
    run_onednn();
    const double b = now();
    run_own();
    t1.push_back(b - a);
    t2.push_back(now() - b);
  }
  std::sort(t1.begin(), t1.end());
  std::sort(t2.begin(), t2.end());
  std::printf("%ldx%ld channels", static_cast<long>(H), static_cast<long>(W));
  for (auto c : cs) std::printf(" %ld", static_cast<long>(c));
  std::printf(", %d threads: oneDNN %.1f us, own %.1f us, own/oneDNN %.2f\n", thr, t1[it / 2] * 1e6, t2[it / 2] * 1e6,
              t2[it / 2] / t1[it / 2]);
  return 0;
}
