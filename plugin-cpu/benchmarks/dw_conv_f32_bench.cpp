// The f32 depthwise kernel (csrc/core/dw_conv_f32.cpp) against oneDNN 3.2's f32 depthwise
// primitive (brdgmm_dw, nhwc, f32 bias, a fused activation: clip 0..6 or swish) on MobileNetV2 /
// MnasNet / EfficientNet / ConvNeXt shapes, alternating in one process, medians, and the largest
// difference of the outputs relative to the output's largest magnitude. The ISA is oneDNN's
// effective one (ONEDNN_MAX_CPU_ISA=AVX2 runs brdgmm_dw:avx2 against our AVX2 build). On 3x3
// shapes it also times the 3x3 tile (dw_conv_f32_tile3.inc, stop 21), the three in a rotating
// order, and checks its bytes against the general tile's. Build (from plugin-cpu/, paths of the
// venv's oneDNN, or oneDNN 3.2's headers and the plugin build's libopforge_dnnl.so.3):
//   g++ -O3 -fopenmp -std=c++17 -Icsrc -I../.venv/include benchmarks/dw_conv_f32_bench.cpp \
//     csrc/core/dw_conv_f32.cpp csrc/core/chunk_pool.cpp csrc/core/host_isa.cpp -L../.venv/lib -ldnnl \
//     -Wl,-rpath,../.venv/lib -o dw_f32_bench
//   ./dw_f32_bench [runs] [threads] [swish]
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/dw_conv_f32.hpp"

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 100;
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  const bool swish = argc > 3 && atoi(argv[3]) != 0;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const auto isa = static_cast<unsigned>(get_effective_cpu_isa());
  const auto a512 = static_cast<unsigned>(cpu_isa::avx512_core);
  const auto kisa = (isa & a512) == a512 ? opforge_cpu::DwConvF32::Isa::avx512 : opforge_cpu::DwConvF32::Isa::avx2;
  struct S { int C, H, k, s; } cs[] = {{32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 3, 2}, {192, 28, 3, 1},
                                       {192, 28, 3, 2}, {384, 14, 3, 1}, {576, 14, 3, 1}, {576, 14, 3, 2}, {960, 7, 3, 1},
                                       {240, 28, 5, 1}, {672, 14, 5, 1}, {480, 14, 5, 1}, {144, 56, 5, 2}, {1152, 7, 5, 1},
                                       {672, 14, 5, 2}, {96, 56, 7, 1}, {384, 14, 7, 1}, {40, 28, 3, 1}, {72, 56, 3, 1}};
  double sum_of = 0, sum_dnnl = 0, sum_3 = 0, sum_of3 = 0, sum_dnnl3 = 0;
  for (auto c : cs) {
    const int N = 1, H = c.H, W = c.H, k = c.k, s = c.s, p = k / 2;
    const int OH = (H + 2 * p - k) / s + 1, OW = OH;
    const int pe = (OH - 1) * s + k - H - p;
    post_ops po;
    if (swish) po.append_eltwise(algorithm::eltwise_swish, 1.f, 0.f);
    else po.append_eltwise(algorithm::eltwise_clip, 0.f, 6.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(scratchpad_mode::user);
    auto smd = memory::desc({N, c.C, H, W}, dt::f32, tag::acdb), dmd = memory::desc({N, c.C, OH, OW}, dt::f32, tag::acdb);
    auto bmd = memory::desc({c.C}, dt::f32, tag::a);
    auto wany = memory::desc({c.C, 1, 1, k, k}, dt::f32, tag::any);
    convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::convolution_direct, smd, wany, bmd,
                                           dmd, {s, s}, {0, 0}, {p, p}, {pe, pe}, attr);
    std::vector<float> wf(size_t(c.C) * k * k), bf(c.C), x(size_t(N) * H * W * c.C), y1(size_t(N) * OH * OW * c.C), y2(y1.size()), y3(y1.size());
    srand(1);
    for (auto& v : wf) v = (rand() % 2001 - 1000) / 3000.f;
    for (auto& v : bf) v = (rand() % 2001 - 1000) / 1000.f;
    for (auto& v : x) v = (rand() % 2001 - 1000) / 250.f;
    memory wplain({{c.C, 1, 1, k, k}, dt::f32, tag::goihw}, eng, wf.data());
    memory wpk(pd.weights_desc(), eng);
    reorder(wplain, wpk).execute(st, wplain, wpk);
    memory sm(smd, eng, x.data()), dm(dmd, eng, y1.data()), bm(bmd, eng, bf.data()), scr(pd.scratchpad_desc(), eng);
    convolution_forward prim(pd);
    opforge_cpu::DwConvF32 dw({N, c.C, H, W, OH, OW, k, k, s, s, p, p}, wf.data(), bf.data(),
                              {swish ? opforge_cpu::PostOp{opforge_cpu::PostOp::swish, 1.f, 0.f}
                                     : opforge_cpu::PostOp{opforge_cpu::PostOp::clip, 0.f, 6.f}},
                              kisa);
    auto run_dnnl = [&] {
      prim.execute(st, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wpk}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dm},
                        {DNNL_ARG_SCRATCHPAD, scr}});
      st.wait();
    };
    // the 3x3 multi-row tile (dw_conv_f32_tile3.inc) where it runs the shape
    opforge_cpu::DwConvF32 dw3({N, c.C, H, W, OH, OW, k, k, s, s, p, p}, wf.data(), bf.data(),
                               {swish ? opforge_cpu::PostOp{opforge_cpu::PostOp::swish, 1.f, 0.f}
                                      : opforge_cpu::PostOp{opforge_cpu::PostOp::clip, 0.f, 6.f}},
                               kisa, true);
    auto run_of = [&] { dw.run(x.data(), y2.data(), threads); };
    auto run_of3 = [&] { dw3.run(x.data(), y3.data(), threads); };
    for (int i = 0; i < 5; ++i) { run_dnnl(); run_of(); run_of3(); }
    std::vector<double> td, to, t3;
    for (int i = 0; i < runs; ++i) {
      // the three in a rotating order, so none always runs right after another
      for (int o = 0; o < 3; ++o) {
        const int which = (i + o) % 3;
        auto t0 = std::chrono::steady_clock::now();
        if (which == 0) run_dnnl();
        else if (which == 1) run_of();
        else if (dw3.uses_tile3()) run_of3();
        auto t1 = std::chrono::steady_clock::now();
        (which == 0 ? td : which == 1 ? to : t3).push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    }
    double diff = 0, big = 0;
    bool same3 = true;
    for (size_t i = 0; i < y1.size(); ++i) {
      diff = std::max(diff, double(std::fabs(y1[i] - y2[i])));
      big = std::max(big, double(std::fabs(y1[i])));
      if (dw3.uses_tile3() && std::memcmp(&y2[i], &y3[i], sizeof(float)) != 0) same3 = false;
    }
    const double a = med(to), b = med(td);
    sum_of += a;
    sum_dnnl += b;
    if (dw3.uses_tile3()) {
      const double a3 = med(t3);
      sum_3 += a3;
      sum_dnnl3 += b;
      sum_of3 += a;
      std::printf("C%5d H%4d k%d s%d  ours %8.1f us  3x3 tile %8.1f us  %s %8.1f us  ratio %.2f  3x3 tile %.2f  "
                  "maxdiff/max %.1e%s\n",
                  c.C, H, k, s, a, a3, pd.impl_info_str(), b, a / b, a3 / b, diff / std::max(big, 1e-30),
                  same3 ? "" : "  3x3 tile DIFFERS");
    } else {
      std::printf("C%5d H%4d k%d s%d  ours %8.1f us  %s %8.1f us  ratio %.2f  maxdiff/max %.1e\n", c.C, H, k, s, a,
                  pd.impl_info_str(), b, a / b, diff / std::max(big, 1e-30));
    }
  }
  std::printf("sum ours %.1f us, oneDNN %.1f us, ratio %.3f (%s)\n", sum_of, sum_dnnl, sum_of / sum_dnnl, kisa == opforge_cpu::DwConvF32::Isa::avx512 ? "avx512" : "avx2");
  std::printf("3x3 shapes: general tile %.1f us, 3x3 tile %.1f us, oneDNN %.1f us, ratios %.3f, %.3f\n", sum_of3, sum_3,
              sum_dnnl3, sum_of3 / sum_dnnl3, sum_3 / sum_dnnl3);
  return 0;
}
