// One bf16 grouped 3x3 convolution (pad 1, f32 bias, ReLU fused; bf16 source and destination) in
// the variants core/nn.cpp can ask oneDNN 3.2 for, timed alternating in one process: `any` (the
// layout oneDNN picks), forced nhwc, forced nChw16c, and the groups merged m at a time into
// block-diagonal ones as regroup_bf16 does (x2 with `any` and nhwc, x4 and x8 where the merged
// group stays under 32 channels before the last step). Prints each variant's implementation and
// destination layout (blk: channel-blocked, flat: nhwc) and the median us of IT runs. The data are
// constant bytes: this times the kernels, the numbers are not checked (the tests do that).
// Measurements: docs/kernel-library.md "Grouped bf16 convolutions without AMX".
//   g++ -O2 -fopenmp -std=c++17 benchmarks/grouped_conv_bf16_bench.cpp -I<dnnl include>
//       <venv>/site-packages/opforge_cpu/libopforge_dnnl.so.3 -Wl,-rpath,<that folder> -o gconv
//   OMP_NUM_THREADS=1 ./gconv C H CPG STRIDE [IT]   (e.g. RegNet's 320 14 16 1)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Variant {
  std::string name, impl;
  primitive prim;
  std::unordered_map<int, memory> args;
  std::vector<double> times;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s C H CPG STRIDE [IT]\n", argv[0]);
    return 2;
  }
  const int C = std::atoi(argv[1]), H = std::atoi(argv[2]), cpg = std::atoi(argv[3]), s = std::atoi(argv[4]);
  const int it = argc > 5 ? std::atoi(argv[5]) : 200;
  if (C <= 0 || H <= 0 || cpg <= 0 || s <= 0 || it <= 0 || C % cpg != 0) {
    std::fprintf(stderr, "C, H, CPG, STRIDE, IT must be positive and CPG must divide C\n");
    return 2;
  }
  const int Ho = (H + 2 - 3) / s + 1;
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  primitive_attr attr;
  post_ops po;
  po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
  attr.set_post_ops(po);
  std::vector<Variant> vs;
  auto add = [&](const char* name, int m, tag sx, tag sy) {
    const int G = C / cpg / m, g = cpg * m;
    memory::dims xd{1, C, H, H}, yd{1, C, Ho, Ho}, wd{G, g, g, 3, 3};
    try {
      convolution_forward::primitive_desc pd(
          eng, prop_kind::forward_inference, algorithm::convolution_direct, memory::desc(xd, dt::bf16, sx),
          memory::desc(wd, dt::bf16, tag::any), memory::desc({C}, dt::f32, tag::a), memory::desc(yd, dt::bf16, sy),
          {s, s}, {1, 1}, {1, 1}, attr);
      Variant v;
      v.name = name;
      v.impl = std::string(pd.impl_info_str()) + (pd.dst_desc().get_inner_nblks() ? " blk" : " flat");
      v.prim = convolution_forward(pd);
      const memory::desc mds[] = {pd.src_desc(), pd.weights_desc(), pd.bias_desc(), pd.dst_desc()};
      const int keys[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
      for (int i = 0; i < 4; ++i) {
        v.args[keys[i]] = memory(mds[i], eng);
        // 0x3c3c is a bf16 of about 0.011 (and a small f32 for the bias): finite sums
        std::memset(v.args[keys[i]].get_data_handle(), i == 2 ? 0 : 0x3c, mds[i].get_size());
      }
      vs.push_back(std::move(v));
    } catch (const dnnl::error&) {
      std::printf("  %-9s no implementation\n", name);
    }
  };
  add("any", 1, tag::any, tag::any);
  add("nhwc", 1, tag::nhwc, tag::nhwc);
  add("nChw16c", 1, tag::nChw16c, tag::nChw16c);
  if ((C / cpg) % 2 == 0) {
    add("x2 any", 2, tag::any, tag::any);
    add("x2 nhwc", 2, tag::nhwc, tag::nhwc);
  }
  if ((C / cpg) % 4 == 0 && cpg * 2 < 32) add("x4 any", 4, tag::any, tag::any);
  if ((C / cpg) % 8 == 0 && cpg * 4 < 32) add("x8 any", 8, tag::any, tag::any);
  for (auto& v : vs)
    for (int i = 0; i < 10; ++i) v.prim.execute(st, v.args);
  st.wait();
  for (int r = 0; r < it; ++r)
    for (auto& v : vs) {
      const double t0 = now();
      v.prim.execute(st, v.args);
      st.wait();
      v.times.push_back(now() - t0);
    }
  std::printf("C=%d H=%d cpg=%d stride=%d threads=%d\n", C, H, cpg, s, omp_get_max_threads());
  for (auto& v : vs) {
    std::sort(v.times.begin(), v.times.end());
    std::printf("  %-9s %-34s %8.1f us\n", v.name.c_str(), v.impl.c_str(), v.times[v.times.size() / 2] * 1e6);
  }
  return 0;
}
