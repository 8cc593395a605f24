// Chains of the bert_small/mlp primitives run back to back as one inference runs them: median
// ms of REPS runs; compare OpenMP wait policies (GOMP_SPINCOUNT, OMP_WAIT_POLICY) quiet and with
// a busy loop on one of the cores, IP=1 for inner_product. docs/kernel-library.md.
//   g++ -O2 -fopenmp -std=c++17 benchmarks/omp_wait_chain.cpp -I<venv>/include -L<venv>/lib -ldnnl \
//       -Wl,-rpath,<venv>/lib -o chain && GOMP_SPINCOUNT=1000 OMP_NUM_THREADS=2 taskset -c 0,1 ./chain
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0);
struct Step { primitive p; std::unordered_map<int, memory> args; };
memory filled(const memory::desc& d, float v) { memory m(d, eng); float* p = (float*)m.get_data_handle(); for (size_t i = 0; i < d.get_size() / 4; ++i) p[i] = v; return m; }
void fc(std::vector<Step>& s, int M, int K, int N, bool relu) {
  memory::desc a({M, K}, dt::f32, tag::ab), w({K, N}, dt::f32, tag::any), b({1, N}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab);
  primitive_attr at; post_ops po; if (relu) po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f); at.set_post_ops(po);
  if (getenv("IP") && *getenv("IP")) {
    memory::desc wi({N, K}, dt::f32, tag::any), bi({N}, dt::f32, tag::a);
    inner_product_forward::primitive_desc pd(eng, prop_kind::forward_inference, a, wi, bi, c, at);
    if (s.empty()) fprintf(stderr, "  (%s)\n", pd.impl_info_str());
    s.push_back({inner_product_forward(pd), {{DNNL_ARG_SRC, filled(a, 0.1f)}, {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), 0.01f)}, {DNNL_ARG_BIAS, filled(bi, 0.f)}, {DNNL_ARG_DST, filled(c, 0.f)}}});
    return;
  }
  matmul::primitive_desc pd(eng, a, w, b, c, at);
  if (s.empty()) fprintf(stderr, "  (%s)\n", pd.impl_info_str());
  s.push_back({matmul(pd), {{DNNL_ARG_SRC, filled(a, 0.1f)}, {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), 0.01f)}, {DNNL_ARG_BIAS, filled(b, 0.f)}, {DNNL_ARG_DST, filled(c, 0.f)}}});
}
void smax(std::vector<Step>& s, int rows, int n) {
  memory::desc d({rows, n}, dt::f32, tag::ab);
  softmax_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::softmax_accurate, d, d, 1);
  s.push_back({softmax_forward(pd), {{DNNL_ARG_SRC, filled(d, 0.1f)}, {DNNL_ARG_DST, filled(d, 0.f)}}});
}
void swish(std::vector<Step>& s, int c, int hw) {
  memory::desc d({1, c, hw, hw}, dt::f32, tag::nchw);
  eltwise_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::eltwise_swish, d, d, 1.f, 0.f);
  s.push_back({eltwise_forward(pd), {{DNNL_ARG_SRC, filled(d, 0.1f)}, {DNNL_ARG_DST, filled(d, 0.f)}}});
}
int main() {
  stream st(eng);
  std::vector<Step> bert, mlp, small;
  for (int l = 0; l < 4; ++l) {
    for (int i = 0; i < 3; ++i) fc(bert, 128, 256, 256, false);
    smax(bert, 4 * 128, 128);
    fc(bert, 128, 256, 256, false); fc(bert, 128, 256, 1024, true); fc(bert, 128, 1024, 256, false);
  }
  for (int i = 0; i < 3; ++i) fc(mlp, 64, 1024, 1024, true);
  // a MobileNet-like run of many small ops, where a wake-up per op shows
  for (int i = 0; i < 100; ++i) swish(small, 64, 28);
  int reps = getenv("REPS") ? atoi(getenv("REPS")) : 200;
  for (auto* ch : {&mlp, &bert, &small}) {
    auto run = [&] { for (auto& x : *ch) x.p.execute(st, x.args); st.wait(); };
    for (int i = 0; i < 10; ++i) run();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      auto a = std::chrono::steady_clock::now(); run(); auto b = std::chrono::steady_clock::now();
      t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
      // the gap between inferences (Python, input binding): threads go to sleep or keep spinning
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < until) {}
    }
    std::sort(t.begin(), t.end());
    printf("  %-5s median %.3f ms  p90 %.3f ms\n", ch == &mlp ? "mlp" : ch == &bert ? "bert" : "small", t[t.size() / 2], t[t.size() * 9 / 10]);
  }
}
