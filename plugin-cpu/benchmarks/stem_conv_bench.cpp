// The stem kernel (core/stem_conv_compute.cpp) against oneDNN 3.2's first convolution as the
// plugin ran it before (the NCHW image reordered to nhwc, jit:avx512_core nhwc -> nhwc, fused
// bias + ReLU), alternating in one process: median ms of IT runs (default 200) and the largest
// difference of the outputs. Per-shape numbers in docs/kernel-library.md (vgg11's stem).
//   g++ -O3 -fopenmp -std=c++17 benchmarks/stem_conv_bench.cpp csrc/core/stem_conv_compute.cpp
//       csrc/core/chunk_pool.cpp -Icsrc -I<venv>/include -L<venv>/lib -ldnnl -Wl,-rpath,<venv>/lib -o stem
//   ./stem N C H W O K S P threads      (e.g. vgg11: 1 3 224 224 64 3 1 1 1; resnet18: 1 3 224 224 64 7 2 3 1)
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/stem_conv_compute.hpp"

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;
using namespace opforge_cpu;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  if (argc < 10) {
    std::fprintf(stderr, "usage: %s N C H W O K S P threads\n", argv[0]);
    return 2;
  }
  const int64_t N = atoi(argv[1]), C = atoi(argv[2]), H = atoi(argv[3]), W = atoi(argv[4]), O = atoi(argv[5]),
                K = atoi(argv[6]), S = atoi(argv[7]), P = atoi(argv[8]);
  const int thr = atoi(argv[9]);
  const int64_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  omp_set_num_threads(thr);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * C * H * W), w(O * C * K * K), b(O);
  for (auto* v : {&x, &w, &b})
    for (auto& e : *v) e = nd(rng);
  memory::desc xu({N, C, H, W}, dt::f32, tag::nchw), xn({N, C, H, W}, dt::f32, tag::nhwc);
  memory::desc wa({O, C, K, K}, dt::f32, tag::any), wp({O, C, K, K}, dt::f32, tag::oihw), bd({O}, dt::f32, tag::a);
  memory::desc yn({N, O, OH, OW}, dt::f32, tag::nhwc);
  post_ops po;
  po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
  primitive_attr attr;
  attr.set_post_ops(po);
  convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::convolution_direct, xn, wa, bd,
                                         yn, {S, S}, {P, P}, {P, P}, attr);
  std::printf("oneDNN: %s\n", pd.impl_info_str());
  memory wm(pd.weights_desc(), eng);
  {
    memory wpm(wp, eng, w.data());
    reorder(wpm, wm).execute(s, wpm, wm);
  }
  memory xum(xu, eng, x.data()), xnm(pd.src_desc(), eng), ym(pd.dst_desc(), eng), bm(bd, eng, b.data());
  reorder r(xum, xnm);
  convolution_forward conv(pd);
  StemGeometry g;
  g.n = N; g.c = C; g.h = H; g.w = W; g.o = O; g.oh = OH; g.ow = OW;
  g.kh = g.kw = K; g.sh = g.sw = S; g.pt = g.pl = P;
  StemConvCompute sc(g, StemDstLayout{0}, w.data(), b.data(), {PostOp{PostOp::relu, 0.f, 0.f}});
  const size_t ny = pd.dst_desc().get_size() / sizeof(float);
  float* y2 = static_cast<float*>(std::aligned_alloc(64, (ny * sizeof(float) + 63) / 64 * 64));
  auto run_onednn = [&] {
    r.execute(s, xum, xnm);
    conv.execute(s, {{DNNL_ARG_SRC, xnm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}});
    s.wait();
  };
  auto run_stem = [&] { sc.run(x.data(), y2, thr); };
  run_onednn();
  run_stem();
  const float* y1 = static_cast<const float*>(ym.get_data_handle());
  double md = 0;
  for (size_t i = 0; i < ny; ++i) md = std::max(md, static_cast<double>(std::fabs(y1[i] - y2[i])));
  std::printf("max |difference| %g\n", md);
  const int iters = std::getenv("IT") ? atoi(std::getenv("IT")) : 200;
  std::vector<double> t1, t2;
  for (int it = 0; it < iters; ++it) {
    const double a = now();
    run_onednn();
    const double m = now();
    run_stem();
    const double e = now();
    t1.push_back(m - a);
    t2.push_back(e - m);
  }
  std::sort(t1.begin(), t1.end());
  std::sort(t2.begin(), t2.end());
  std::printf("N%ld C%ld %ldx%ld O%ld k%ld s%ld p%ld threads %d: oneDNN %.3f ms, stem %.3f ms, stem/oneDNN %.2f\n",
              static_cast<long>(N), static_cast<long>(C), static_cast<long>(H), static_cast<long>(W),
              static_cast<long>(O), static_cast<long>(K), static_cast<long>(S), static_cast<long>(P), thr,
              t1[iters / 2] * 1e3, t2[iters / 2] * 1e3, t2[iters / 2] / t1[iters / 2]);
  std::free(y2);
  return 0;
}
