// The int8 depthwise kernel (csrc/core/dw_conv_int8.cpp, stop 22) against oneDNN 3.2's int8
// depthwise primitive (brdgmm_dw: u8/s8 nhwc source, s8 weights with per-channel scales, f32
// bias, a fused activation, requantized u8/s8 nhwc destination) on MobileNetV2 / MnasNet /
// EfficientNet shapes, alternating in one process, medians, and whether the output bytes are
// the same. The ISA is oneDNN's effective one (ONEDNN_MAX_CPU_ISA=AVX2 runs brdgmm_dw:avx2
// against our AVX2 build). Build (from plugin-cpu/, with oneDNN 3.2's headers and the plugin
// build's libopforge_dnnl.so.3):
//   g++ -O3 -fopenmp -std=c++17 -Icsrc -I<onednn-3.2>/include benchmarks/dw_conv_int8_bench.cpp \
//     csrc/core/dw_conv_int8.cpp csrc/core/chunk_pool.cpp csrc/core/host_isa.cpp \
//     build/cp311-cp311-linux_x86_64/libopforge_dnnl.so.3 -Wl,-rpath,$PWD/build/cp311-cp311-linux_x86_64 -o dw_int8_bench
//   ./dw_int8_bench [runs] [threads] [mode]
// mode 0: u8 -> u8, zero points 0, ReLU6 (the models' case); 1: u8 with source zero point 7 ->
// u8 with destination zero point 121, no activation; 2: s8 with zero point -3 -> s8 with zero
// point 5, ReLU.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/dw_conv_int8.hpp"

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 100;
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  const int mode = argc > 3 ? atoi(argv[3]) : 0;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const auto isa = static_cast<unsigned>(get_effective_cpu_isa());
  const auto a512 = static_cast<unsigned>(cpu_isa::avx512_core);
  const auto kisa = (isa & a512) == a512 ? opforge_cpu::DwConvInt8::Isa::avx512 : opforge_cpu::DwConvInt8::Isa::avx2;
  // MobileNetV2 (3x3), MnasNet / EfficientNet (3x3, 5x5), and odd ones (channels not a multiple
  // of 16, an odd width)
  struct S { int C, H, k, s; } cs[] = {{32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 3, 2}, {192, 28, 3, 1},
                                       {192, 28, 3, 2}, {384, 14, 3, 1}, {576, 14, 3, 1}, {576, 14, 3, 2}, {960, 7, 3, 1},
                                       {48, 112, 3, 2}, {72, 56, 3, 1}, {72, 56, 5, 2}, {120, 28, 5, 1}, {240, 28, 5, 2},
                                       {480, 14, 5, 1}, {576, 14, 5, 1}, {576, 14, 5, 2}, {1152, 7, 5, 1}, {672, 14, 5, 1},
                                       {40, 27, 3, 1}, {20, 15, 5, 2}};
  const bool sdt = mode == 2;
  const int zsrc = mode == 1 ? 7 : mode == 2 ? -3 : 0, zdst = mode == 1 ? 121 : mode == 2 ? 5 : 0;
  const float ssrc = 0.0213f, sdst = 0.0371f;
  double sum_of = 0, sum_dnnl = 0, sum_of5 = 0, sum_dnnl5 = 0;
  bool all_same = true;
  for (auto c : cs) {
    const int N = 1, H = c.H, W = c.H, k = c.k, s = c.s, p = k / 2;
    const int OH = (H + 2 * p - k) / s + 1, OW = OH;
    const int pe = (OH - 1) * s + k - H - p;
    post_ops po;
    if (mode == 0) po.append_eltwise(algorithm::eltwise_clip, 0.f, 6.f);
    if (mode == 2) po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(scratchpad_mode::user);
    attr.set_scales_mask(DNNL_ARG_SRC, 0);
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 3);
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    if (zsrc) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
    if (zdst) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
    const dt t = sdt ? dt::s8 : dt::u8;
    auto smd = memory::desc({N, c.C, H, W}, t, tag::acdb), dmd = memory::desc({N, c.C, OH, OW}, t, tag::acdb);
    auto bmd = memory::desc({c.C}, dt::f32, tag::a);
    auto wany = memory::desc({c.C, 1, 1, k, k}, dt::s8, tag::any);
    convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::convolution_direct, smd, wany, bmd,
                                           dmd, {s, s}, {0, 0}, {p, p}, {pe, pe}, attr);
    std::vector<int8_t> wq(size_t(c.C) * k * k);
    std::vector<float> bf(c.C), ws(c.C);
    std::vector<uint8_t> x(size_t(N) * H * W * c.C), y1(size_t(N) * OH * OW * c.C), y2(y1.size());
    srand(1);
    for (auto& v : wq) v = static_cast<int8_t>(rand() % 256 - 128);
    for (auto& v : ws) v = (rand() % 1000 + 200) / 2.5e5f;
    for (auto& v : bf) v = (rand() % 2001 - 1000) / 1000.f;
    for (auto& v : x) v = static_cast<uint8_t>(rand() % 256);
    memory wplain({{c.C, 1, 1, k, k}, dt::s8, tag::goihw}, eng, wq.data());
    memory wpk(pd.weights_desc(), eng);
    reorder(wplain, wpk).execute(st, wplain, wpk);
    memory sm(smd, eng, x.data()), dm(dmd, eng, y1.data()), bm(bmd, eng, bf.data()), scr(pd.scratchpad_desc(), eng);
    auto f32mem = [&](const float* v, int n) {
      memory m({{n}, dt::f32, tag::a}, eng);
      std::memcpy(m.get_data_handle(), v, sizeof(float) * n);
      return m;
    };
    auto s32mem = [&](int v) {
      memory m({{1}, dt::s32, tag::a}, eng);
      std::memcpy(m.get_data_handle(), &v, 4);
      return m;
    };
    memory ssm = f32mem(&ssrc, 1), wsm = f32mem(ws.data(), c.C), dsm = f32mem(&sdst, 1), zsm = s32mem(zsrc), zdm = s32mem(zdst);
    convolution_forward prim(pd);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wpk}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dm},
                                         {DNNL_ARG_SCRATCHPAD, scr}, {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, ssm},
                                         {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, wsm}, {DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, dsm}};
    if (zsrc) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zsm);
    if (zdst) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, zdm);
    opforge_cpu::DwInt8Quant q;
    q.src_signed = q.dst_signed = sdt;
    q.src_zero_point = zsrc;
    q.src_scale = ssrc;
    q.wei_scales = ws.data();
    q.bias = bf.data();
    q.dst_scale = sdst;
    q.dst_zero_point = zdst;
    std::vector<opforge_cpu::PostOp> post;
    if (mode == 0) post.push_back({opforge_cpu::PostOp::clip, 0.f, 6.f});
    if (mode == 2) post.push_back({opforge_cpu::PostOp::relu, 0.f, 0.f});
    opforge_cpu::DwConvInt8 dw({N, c.C, H, W, OH, OW, k, k, s, s, p, p}, wq.data(), q, post, kisa);
    auto run_dnnl = [&] {
      prim.execute(st, args);
      st.wait();
    };
    auto run_of = [&] { dw.run(x.data(), y2.data(), threads); };
    for (int i = 0; i < 5; ++i) { run_dnnl(); run_of(); }
    std::vector<double> td, to;
    for (int i = 0; i < runs; ++i) {
      for (int o = 0; o < 2; ++o) {  // alternating, the first one swapped each run
        const bool ours = (i + o) % 2 == 1;
        auto t0 = std::chrono::steady_clock::now();
        if (ours) run_of();
        else run_dnnl();
        auto t1 = std::chrono::steady_clock::now();
        (ours ? to : td).push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    }
    size_t differ = 0;
    int maxd = 0;
    for (size_t i = 0; i < y1.size(); ++i) {
      const int a = sdt ? int(int8_t(y1[i])) : int(y1[i]), b = sdt ? int(int8_t(y2[i])) : int(y2[i]);
      if (a != b) ++differ;
      maxd = std::max(maxd, std::abs(a - b));
    }
    all_same = all_same && differ == 0;
    const double a = med(to), b = med(td);
    sum_of += a;
    sum_dnnl += b;
    if (k == 5) { sum_of5 += a; sum_dnnl5 += b; }
    std::printf("C%5d H%4d k%d s%d  ours %8.1f us  %s %8.1f us  ratio %.2f  bytes differ %zu/%zu (max %d)\n", c.C, H, k, s, a,
                pd.impl_info_str(), b, a / b, differ, y1.size(), maxd);
  }
  std::printf("sum ours %.1f us, oneDNN %.1f us, ratio %.3f; 5x5 %.3f (%s, mode %d)%s\n", sum_of, sum_dnnl, sum_of / sum_dnnl,
              sum_of5 / sum_dnnl5, kisa == opforge_cpu::DwConvInt8::Isa::avx512 ? "avx512" : "avx2", mode,
              all_same ? ", all bytes the same" : ", BYTES DIFFER");
  return 0;
}
