// One f32 convolution (bias + ReLU fused, as in the CNNs) in the layouts oneDNN 3.2 offers, timed
// alternating in one process: nhwc (what `format_tag::any` gives, brgconv), nChw16c (the JIT
// kernels, MLAS's NCHWc-like layout) and, for a 1x1 stride-1 convolution, the same product as a
// matmul [H*W, IC] x [IC, OC]. Also prints which implementation oneDNN gives a destination that is
// a channel slice of a wider nhwc tensor (a Concat written in place): 3.2 has only `ref:any` there,
// so it is not timed. Median us of IT runs (default 300); every variant's output is compared with
// the nhwc one (largest absolute difference). Per-shape numbers in docs/kernel-library.md.
//   g++ -O2 -fopenmp -std=c++17 benchmarks/conv_f32_layout_bench.cpp -I<venv>/include
//       -L<venv>/lib -ldnnl -Wl,-rpath,<venv>/lib -o conv_layout_bench
//   ./conv_layout_bench IC OC H K stride threads [IT]   (e.g. mnasnet's 32 16 112 1 1 1)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median_us(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e6;
}

struct Variant {
  std::string name, impl;
  primitive prim;
  std::unordered_map<int, memory> args;
  memory out;  // the destination, for the comparison
  std::vector<double> times;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s IC OC H K stride threads [IT]\n", argv[0]);
    return 2;
  }
  const int64_t IC = std::atoll(argv[1]), OC = std::atoll(argv[2]), H = std::atoll(argv[3]), K = std::atoll(argv[4]);
  const int64_t S = std::atoll(argv[5]);
  const int threads = std::atoi(argv[6]);
  const int iters = argc > 7 ? std::atoi(argv[7]) : 300;
  const int64_t P = K / 2, OH = (H + 2 * P - K) / S + 1;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);

  // The data, plain: image nchw, weights oihw, bias; reordered into each variant's layout.
  std::vector<float> x(IC * H * H), w(OC * IC * K * K), b(OC);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 13) % 97) * 0.01f - 0.4f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 101) * 0.001f - 0.05f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.01f * static_cast<float>(i % 7);
  memory px({{1, IC, H, H}, dt::f32, tag::nchw}, eng, x.data());
  memory pw({{OC, IC, K, K}, dt::f32, tag::oihw}, eng, w.data());
  memory::desc bias_md({OC}, dt::f32, tag::a);
  memory mb(bias_md, eng, b.data());
  post_ops po;
  po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
  primitive_attr attr;
  attr.set_post_ops(po);

  std::vector<Variant> vs;
  for (tag tg : {tag::nhwc, tag::nChw16c}) {
    memory::desc src({1, IC, H, H}, dt::f32, tg), dst({1, OC, OH, OH}, dt::f32, tg);
    memory::desc wany({OC, IC, K, K}, dt::f32, tag::any);
    auto pd = convolution_forward::primitive_desc(eng, prop_kind::forward_inference, algorithm::convolution_direct,
                                                  src, wany, bias_md, dst, {S, S}, {P, P}, {P, P}, attr);
    memory ms(pd.src_desc(), eng), mw(pd.weights_desc(), eng), md(pd.dst_desc(), eng);
    reorder(px, ms).execute(s, px, ms);
    reorder(pw, mw).execute(s, pw, mw);
    vs.push_back({tg == tag::nhwc ? "nhwc" : "nChw16c", pd.impl_info_str(), convolution_forward(pd),
                  {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}}, md, {}});
  }
  if (K == 1 && S == 1) {
    // The nhwc source is a row-major [H*W, IC] matrix as it is; the output [H*W, OC] is nhwc.
    memory::desc a({H * H, IC}, dt::f32, tag::ab), wm({IC, OC}, dt::f32, tag::any), bm({1, OC}, dt::f32, tag::ab);
    memory::desc c({H * H, OC}, dt::f32, tag::ab);
    auto pd = matmul::primitive_desc(eng, a, wm, bm, c, attr);
    memory mw(pd.weights_desc(), eng), mc(c, eng);
    memory pwt({{IC, OC}, dt::f32, tag::ba}, eng, w.data());  // oihw with 1x1 taps is [OC, IC]
    reorder(pwt, mw).execute(s, pwt, mw);
    memory ma(a, eng, vs[0].args.at(DNNL_ARG_SRC).get_data_handle());
    memory mbm(bm, eng, b.data());
    vs.push_back({"matmul", pd.impl_info_str(), matmul(pd),
                  {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mbm}, {DNNL_ARG_DST, mc}}, mc, {}});
  }
  s.wait();
  {
    memory::desc wide({1, 2 * OC, OH, OH}, dt::f32, tag::nhwc);
    auto pd = convolution_forward::primitive_desc(
        eng, prop_kind::forward_inference, algorithm::convolution_direct, vs[0].args.at(DNNL_ARG_SRC).get_desc(),
        vs[0].args.at(DNNL_ARG_WEIGHTS).get_desc(), bias_md, wide.submemory_desc({1, OC, OH, OH}, {0, OC, 0, 0}),
        {S, S}, {P, P}, {P, P}, attr);
    std::printf("destination a channel slice of a wider nhwc tensor: %s (not timed)\n", pd.impl_info_str());
  }

  for (int i = 0; i < iters; ++i)
    for (auto& v : vs) {
      const double t = now();
      v.prim.execute(s, v.args);
      s.wait();
      v.times.push_back(now() - t);
    }

  // Every output back to plain nchw, compared with the nhwc variant's.
  std::vector<std::vector<float>> plain;
  for (auto& v : vs) {
    plain.emplace_back(OC * OH * OH);
    memory::desc as_nhwc({1, OC, OH, OH}, dt::f32, tag::nhwc);
    memory src(v.name == "matmul" ? as_nhwc : v.out.get_desc(), eng, v.out.get_data_handle());
    memory dst({{1, OC, OH, OH}, dt::f32, tag::nchw}, eng, plain.back().data());
    reorder(src, dst).execute(s, src, dst);
  }
  s.wait();
  std::printf("%ld->%ld %ldx%ld k%ld s%ld, %d thread(s), median us of %d:\n", static_cast<long>(IC),
              static_cast<long>(OC), static_cast<long>(H), static_cast<long>(H), static_cast<long>(K),
              static_cast<long>(S), threads, iters);
  const double base = median_us(vs[0].times);
  for (size_t i = 0; i < vs.size(); ++i) {
    double diff = 0;
    for (size_t j = 0; j < plain[i].size(); ++j) diff = std::max(diff, static_cast<double>(std::fabs(plain[i][j] - plain[0][j])));
    const double us = median_us(vs[i].times);
    std::printf("  %-8s %-28s %9.1f  x%.2f of nhwc  max diff %.2g\n", vs[i].name.c_str(), vs[i].impl.c_str(), us,
                us / base, diff);
  }
  return 0;
}
