// The bf16 depthwise kernel (csrc/core/dw_conv_bf16.cpp) against oneDNN 3.2's one-thread bf16
// depthwise primitive (brdgmm_dw, nhwc, bf16 bias, ReLU6 post-op) on MobileNetV2 / MnasNet /
// EfficientNet / ConvNeXt shapes, alternating in one process, medians, and the largest difference
// of the outputs in bf16 steps. Build (from plugin-cpu/, paths of the venv's oneDNN):
//   g++ -O3 -fopenmp -std=c++17 -Icsrc -I../.venv/include benchmarks/dw_conv_bench.cpp \
//     csrc/core/dw_conv_bf16.cpp csrc/core/chunk_pool.cpp -L../.venv/lib -ldnnl -Wl,-rpath,../.venv/lib -o dw_bench
//   ./dw_bench [runs] [threads]
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/dw_conv_bf16.hpp"

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

static float bf2f(uint16_t b) { uint32_t u = uint32_t(b) << 16; float f; std::memcpy(&f, &u, 4); return f; }
static uint16_t f2bf(float f) { uint32_t u; std::memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return uint16_t(u >> 16); }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 100;
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  struct S { int C, H, k, s; } cs[] = {{32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 3, 2}, {192, 28, 3, 1},
                                       {192, 28, 3, 2}, {384, 14, 3, 1}, {576, 14, 3, 1}, {576, 14, 3, 2}, {960, 7, 3, 1},
                                       {240, 28, 5, 1}, {672, 14, 5, 1}, {480, 14, 5, 1}, {144, 56, 5, 2}, {1152, 7, 5, 1},
                                       {96, 56, 7, 1}, {192, 28, 7, 1}, {384, 14, 7, 1}, {768, 7, 7, 1}, {40, 28, 3, 1}};
  double sum_of = 0, sum_dnnl = 0;
  for (auto c : cs) {
    const int N = 1, H = c.H, W = c.H, k = c.k, s = c.s, p = k / 2;
    const int OH = (H + 2 * p - k) / s + 1, OW = OH;
    const int pe = (OH - 1) * s + k - H - p;
    post_ops po;
    po.append_eltwise(algorithm::eltwise_clip, 0.f, 6.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(scratchpad_mode::user);
    auto smd = memory::desc({N, c.C, H, W}, dt::bf16, tag::acdb), dmd = memory::desc({N, c.C, OH, OW}, dt::bf16, tag::acdb);
    auto bmd = memory::desc({c.C}, dt::bf16, tag::a);
    auto wany = memory::desc({c.C, 1, 1, k, k}, dt::bf16, tag::any);
    convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::convolution_direct, smd, wany, bmd,
                                           dmd, {s, s}, {0, 0}, {p, p}, {pe, pe}, attr);
    std::vector<float> wf(size_t(c.C) * k * k), bf(c.C);
    std::vector<uint16_t> x(size_t(N) * H * W * c.C), y1(size_t(N) * OH * OW * c.C), y2(y1.size());
    srand(1);
    for (auto& v : wf) v = bf2f(f2bf((rand() % 2001 - 1000) / 3000.f));
    for (auto& v : bf) v = bf2f(f2bf((rand() % 2001 - 1000) / 1000.f));
    for (auto& v : x) v = f2bf((rand() % 2001 - 1000) / 250.f);
    std::vector<uint16_t> wb(wf.size()), bb(bf.size());
    for (size_t i = 0; i < wf.size(); ++i) wb[i] = f2bf(wf[i]);
    for (size_t i = 0; i < bf.size(); ++i) bb[i] = f2bf(bf[i]);
    memory wuser({{c.C, 1, 1, k, k}, dt::bf16, tag::abcde}, eng, wb.data()), W_(pd.weights_desc(), eng);
    reorder(wuser, W_).execute(st, wuser, W_);
    std::vector<char> scr(pd.scratchpad_desc().get_size() + 64);
    convolution_forward prim(pd);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(smd, eng, x.data())}, {DNNL_ARG_WEIGHTS, W_},
                                         {DNNL_ARG_BIAS, memory(bmd, eng, bb.data())}, {DNNL_ARG_DST, memory(dmd, eng, y1.data())},
                                         {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng, scr.data())}};
    opforge_cpu::DwConvBf16 dw({N, c.C, H, W, OH, OW, k, k, s, s, p, p}, wf.data(), bf.data(),
                               {{opforge_cpu::PostOp::clip, 0.f, 6.f}}, true);
    std::vector<double> ta, tb;
    for (int r = 0; r < runs + 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      prim.execute(st, args);
      st.wait();
      auto t1 = std::chrono::steady_clock::now();
      dw.run(x.data(), y2.data(), threads);
      auto t2 = std::chrono::steady_clock::now();
      if (r >= 5) {
        ta.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        tb.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      }
    }
    int worst = 0;
    for (size_t i = 0; i < y1.size(); ++i) worst = std::max(worst, std::abs(int(int16_t(y1[i])) - int(int16_t(y2[i]))));
    const double a = med(ta), b = med(tb);
    sum_of += b;
    sum_dnnl += a;
    printf("%4d %3d k%d s%d  %-28s %8.1f us  ours %8.1f us  %.2f  maxdiff %d steps\n", c.C, H, k, s, pd.impl_info_str(), a, b,
           b / a, worst);
  }
  printf("sum oneDNN %.1f ours %.1f  %.2f\n", sum_dnnl, sum_of, sum_of / sum_dnnl);
}
