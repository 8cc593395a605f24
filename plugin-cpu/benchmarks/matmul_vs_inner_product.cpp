// oneDNN matmul vs inner_product (FullyConnected) per layer, f32, the bert_small/mlp shapes:
// median ms of REPS runs (MIN=1: the 10th percentile). Emulate an AVX2 host with
// ONEDNN_MAX_CPU_ISA=AVX2. docs/kernel-library.md, "f32 on AVX2 and AVX-512 hosts".
//   g++ -O2 -fopenmp -std=c++17 benchmarks/matmul_vs_inner_product.cpp -I<venv>/include -L<venv>/lib -ldnnl \
//       -Wl,-rpath,<venv>/lib -o mvi && OMP_NUM_THREADS=1 ./mvi
#include <oneapi/dnnl/dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdlib>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0);
template <class F> double med(F f, int reps) {
  std::vector<double> t; for (int i = 0; i < 5; ++i) f();
  for (int i = 0; i < reps; ++i) { auto a = std::chrono::steady_clock::now(); f(); auto b = std::chrono::steady_clock::now(); t.push_back(std::chrono::duration<double, std::milli>(b - a).count()); }
  std::sort(t.begin(), t.end()); return getenv("MIN") ? t[t.size()/10] : t[t.size() / 2];
}
int main(int argc, char** argv) {
  stream s(eng);
  std::vector<std::vector<int>> shapes = {{128,256,256},{128,256,1024},{128,1024,256},{64,1024,1024},{1,1024,1024},{384,768,768}};
  // optional arguments MxKxN (e.g. 128x768x3072) replace the default shapes
  if (argc > 1) shapes.clear();
  for (int i = 1; i < argc; ++i) {
    int m = 0, k = 0, n = 0;
    if (sscanf(argv[i], "%dx%dx%d", &m, &k, &n) != 3 || m <= 0 || k <= 0 || n <= 0) {
      fprintf(stderr, "bad shape '%s': expected MxKxN\n", argv[i]);
      return 2;
    }
    shapes.push_back({m, k, n});
  }
  int reps = getenv("REPS") ? atoi(getenv("REPS")) : 200;
  for (auto& sh : shapes) {
    int M = sh[0], K = sh[1], N = sh[2];
    double fl = 2.0 * M * K * N;
    memory::desc a({M, K}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab), bias({N}, dt::f32, tag::a);
    std::vector<float> A(M*K, 1.f), W(K*N, 0.01f), C(M*N), B(N, 0.f);
    memory am(a, eng, A.data()), cm(c, eng, C.data()), bm(bias, eng, B.data());
    // matmul, weights any
    for (int any = 0; any < 2; ++any) {
      memory::desc w({K, N}, dt::f32, any ? tag::any : tag::ab);
      matmul::primitive_desc pd(eng, a, w, memory::desc({1, N}, dt::f32, tag::ab), c);
      memory wm(pd.weights_desc(), eng); { float* p = static_cast<float*>(wm.get_data_handle()); size_t n = pd.weights_desc().get_size() / 4; for (size_t i = 0; i < n; ++i) p[i] = 0.01f; }
      matmul p(pd);
      memory bm2(memory::desc({1, N}, dt::f32, tag::ab), eng, B.data());
      double ms = med([&]{ p.execute(s, {{DNNL_ARG_SRC, am},{DNNL_ARG_WEIGHTS, wm},{DNNL_ARG_BIAS,bm2},{DNNL_ARG_DST, cm}}); s.wait(); }, reps);
      printf("M%4d K%4d N%4d matmul w=%s %-28s %.3f ms %.1f GF/s\n", M, K, N, any ? "any" : "ab ", pd.impl_info_str(), ms, fl / ms / 1e6);
    }
    {
      // inner product: weights [N, K] (oc, ic)
      memory::desc w({N, K}, dt::f32, tag::any);
      inner_product_forward::primitive_desc pd(eng, prop_kind::forward_inference, memory::desc({M, K}, dt::f32, tag::any).get_format_kind() == memory::format_kind::any ? a : a, w, bias, c);
      memory wm(pd.weights_desc(), eng); { float* p = static_cast<float*>(wm.get_data_handle()); size_t n = pd.weights_desc().get_size() / 4; for (size_t i = 0; i < n; ++i) p[i] = 0.01f; }
      inner_product_forward p(pd);
      double ms = med([&]{ p.execute(s, {{DNNL_ARG_SRC, am},{DNNL_ARG_WEIGHTS, wm},{DNNL_ARG_BIAS,bm},{DNNL_ARG_DST, cm}}); s.wait(); }, reps);
      printf("M%4d K%4d N%4d inner_product  %-28s %.3f ms %.1f GF/s\n", M, K, N, pd.impl_info_str(), ms, fl / ms / 1e6);
    }
  }
}
