// One oneDNN build against another: the layers of the benchmark models, one primitive each.
// Builds unchanged against oneDNN 3.2 (onednn-cpu-gomp, OpenMP), 3.9 and 3.13 (PyPI `onednn`, SYCL+TBB);
// how to build and run each is in docs/kernel-library.md, "Newer oneDNN from PyPI".
// Usage: ./bench [substring | !substring] [runs]; threads come from the CPU affinity mask (taskset) and,
// for the OpenMP build, OMP_NUM_THREADS. Prints: case, implementation, median ms, GFLOP/s.
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

static int g_runs = 20;

// Median wall time of one execute + wait, after 3 warm-up runs (JIT, first-touch, caches).
static double median_ms(const std::function<void()>& f) {
    for (int i = 0; i < 3; ++i) f();
    std::vector<double> t;
    for (int i = 0; i < g_runs; ++i) {
        auto a = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// Fill with small deterministic values so denormals and zeros don't flatter any kernel.
static void fill(memory& m) {
    size_t n = m.get_desc().get_size();
    auto* p = static_cast<unsigned char*>(m.get_data_handle());
    if (m.get_desc().get_data_type() == dt::f32) {
        auto* f = reinterpret_cast<float*>(p);
        for (size_t i = 0; i < n / 4; ++i) f[i] = 0.01f * float(int(i % 97) - 48);
    } else if (m.get_desc().get_data_type() == dt::bf16) {  // bf16 = the upper half of an f32
        auto* h = reinterpret_cast<uint16_t*>(p);
        for (size_t i = 0; i < n / 2; ++i) {
            float v = 0.01f * float(int(i % 97) - 48);
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            h[i] = static_cast<uint16_t>(bits >> 16);
        }
    } else {  // u8 / s8: small positive integers
        for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>((i * 7) % 61);
    }
}

static void report(const char* name, const char* impl, double ms, double gflop) {
    std::printf("%-40s %-34s %10.4f ms %8.1f GF/s\n", name, impl, ms, gflop / ms * 1e3);
    std::fflush(stdout);
}

struct Ctx { engine eng; stream st; };

static void run_matmul(Ctx& c, const char* name, int M, int K, int N, dt d) {
    memory::desc a({M, K}, d, tag::ab), b({K, N}, d, tag::any), bias({1, N}, dt::f32, tag::ab),
        out({M, N}, d == dt::bf16 ? dt::bf16 : dt::f32, tag::ab);
    auto pd = matmul::primitive_desc(c.eng, a, b, bias, out);
    memory ma(pd.src_desc(), c.eng), mb(pd.weights_desc(), c.eng), mbias(pd.bias_desc(), c.eng), mc(pd.dst_desc(), c.eng);
    fill(ma); fill(mb); fill(mbias);
    matmul prim(pd);
    double ms = median_ms([&] {
        prim.execute(c.st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_BIAS, mbias}, {DNNL_ARG_DST, mc}});
        c.st.wait();
    });
    report(name, pd.impl_info_str(), ms, 2.0 * M * K * N / 1e9);
}

// The same product as an inner product (what OpenVINO's FullyConnected is; OPFORGE_CPU_MATMUL=inner_product).
static void run_ip(Ctx& c, const char* name, int M, int K, int N) {
    memory::desc a({M, K}, dt::f32, tag::ab), w({N, K}, dt::f32, tag::any), bias({N}, dt::f32, tag::a),
        out({M, N}, dt::f32, tag::ab);
    auto pd = inner_product_forward::primitive_desc(c.eng, prop_kind::forward_inference, a, w, bias, out);
    memory ma(pd.src_desc(), c.eng), mw(pd.weights_desc(), c.eng), mb(pd.bias_desc(), c.eng), mc(pd.dst_desc(), c.eng);
    fill(ma); fill(mw); fill(mb);
    inner_product_forward prim(pd);
    double ms = median_ms([&] {
        prim.execute(c.st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, mc}});
        c.st.wait();
    });
    report(name, pd.impl_info_str(), ms, 2.0 * M * K * N / 1e9);
}

struct ConvShape { int C, K, H, W, R, s, p, groups; };

static void run_conv(Ctx& c, const char* name, ConvShape s, dt src_dt) {
    int OH = (s.H + 2 * s.p - s.R) / s.s + 1, OW = (s.W + 2 * s.p - s.R) / s.s + 1;
    bool int8 = src_dt == dt::u8;
    dt wdt = int8 ? dt::s8 : src_dt, ddt = int8 ? dt::u8 : src_dt;
    memory::dims wdims = s.groups > 1 ? memory::dims{s.groups, s.K / s.groups, s.C / s.groups, s.R, s.R}
                                      : memory::dims{s.K, s.C, s.R, s.R};
    memory::desc src({1, s.C, s.H, s.W}, src_dt, tag::any), wei(wdims, wdt, tag::any),
        bias({s.K}, dt::f32, tag::a), dst({1, s.K, OH, OW}, ddt, tag::any);
    primitive_attr attr;
    post_ops po;
    po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
    if (int8) {  // per-tensor src/dst scales and per-output-channel weight scales, as a QDQ model has
        attr.set_scales_mask(DNNL_ARG_SRC, 0);
        attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1);
        attr.set_scales_mask(DNNL_ARG_DST, 0);
    }
    auto pd = convolution_forward::primitive_desc(c.eng, prop_kind::forward_inference, algorithm::convolution_direct,
                                                  src, wei, bias, dst, {s.s, s.s}, {s.p, s.p}, {s.p, s.p}, attr);
    memory ms(pd.src_desc(), c.eng), mw(pd.weights_desc(), c.eng), mb(pd.bias_desc(), c.eng), md(pd.dst_desc(), c.eng);
    fill(ms); fill(mw); fill(mb);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}};
    if (int8) {
        memory::desc one({1}, dt::f32, tag::a), perk({s.K}, dt::f32, tag::a);
        memory s1(one, c.eng), s2(perk, c.eng), s3(one, c.eng);
        static_cast<float*>(s1.get_data_handle())[0] = 0.02f;
        for (int k = 0; k < s.K; ++k) static_cast<float*>(s2.get_data_handle())[k] = 0.001f * float(1 + k % 5);
        static_cast<float*>(s3.get_data_handle())[0] = 0.05f;
        args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC] = s1;
        args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS] = s2;
        args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST] = s3;
    }
    convolution_forward prim(pd);
    double t = median_ms([&] { prim.execute(c.st, args); c.st.wait(); });
    double gf = 2.0 * s.K * (s.C / s.groups) * s.R * s.R * OH * OW / 1e9;
    report(name, pd.impl_info_str(), t, gf);
}

// Batch-1 bidirectional LSTM configured as plugin-cpu's rnn_onednn.cpp does (ONNX LSTM
// direction=bidirectional): ntc layers, initial/final h and c states, user scratchpad.
static void run_lstm(Ctx& c, const char* name, int T, int I, int H) {
    const int L = 1, D = 2, G = 4, N = 1;
    memory::desc src({T, N, I}, dt::f32, tag::ntc), wl({L, D, I, G, H}, dt::f32, tag::any),
        wi({L, D, H, G, H}, dt::f32, tag::any), b({L, D, G, H}, dt::f32, tag::ldgo),
        dst({T, N, 2 * H}, dt::f32, tag::ntc), it({L, D, N, H}, dt::f32, tag::ldnc);
    memory::desc none;
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    auto pd = lstm_forward::primitive_desc(c.eng, prop_kind::forward_inference,
                                           rnn_direction::bidirectional_concat, src, it, it, wl, wi, none, none, b,
                                           dst, it, it, attr);
    memory ms(pd.src_desc(), c.eng), mwl(pd.weights_layer_desc(), c.eng), mwi(pd.weights_iter_desc(), c.eng),
        mb(pd.bias_desc(), c.eng), md(pd.dst_desc(), c.eng), h0(it, c.eng), c0(it, c.eng), hn(it, c.eng),
        cn(it, c.eng);
    fill(ms); fill(mwl); fill(mwi); fill(mb); fill(h0); fill(c0);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC_LAYER, ms}, {DNNL_ARG_SRC_ITER, h0},
                                         {DNNL_ARG_SRC_ITER_C, c0}, {DNNL_ARG_WEIGHTS_LAYER, mwl},
                                         {DNNL_ARG_WEIGHTS_ITER, mwi}, {DNNL_ARG_BIAS, mb},
                                         {DNNL_ARG_DST_LAYER, md}, {DNNL_ARG_DST_ITER, hn},
                                         {DNNL_ARG_DST_ITER_C, cn}};
    if (pd.workspace_desc().get_size() > 0) args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), c.eng);
    if (pd.scratchpad_desc().get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), c.eng);
    lstm_forward prim(pd);
    double t = median_ms([&] { prim.execute(c.st, args); c.st.wait(); });
    double gf = 2.0 * D * T * G * H * (I + H) / 1e9;  // per step and direction: [1,I]x[I,4H] + [1,H]x[H,4H]
    report(name, pd.impl_info_str(), t, gf);
}

// A 256-element ReLU: almost no work, so the time is the fixed cost of one execute + wait.
static void run_tiny(Ctx& c, const char* name) {
    memory::desc d({1, 256}, dt::f32, tag::ab);
    auto pd = eltwise_forward::primitive_desc(c.eng, prop_kind::forward_inference, algorithm::eltwise_relu, d, d, 0.f, 0.f);
    memory a(d, c.eng), b(d, c.eng);
    fill(a);
    eltwise_forward prim(pd);
    double t = median_ms([&] { prim.execute(c.st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, b}}); c.st.wait(); });
    report(name, pd.impl_info_str(), t, 256e-9);
}

// 100 of those ReLUs submitted back to back, one wait: the cost per op when nothing waits in between
// (an OpenMP-runtime stream runs each execute() synchronously; a SYCL one queues a host task).
static void run_tiny_chain(Ctx& c, const char* name) {
    memory::desc d({1, 256}, dt::f32, tag::ab);
    auto pd = eltwise_forward::primitive_desc(c.eng, prop_kind::forward_inference, algorithm::eltwise_relu, d, d, 0.f, 0.f);
    memory a(d, c.eng), b(d, c.eng);
    fill(a);
    eltwise_forward prim(pd);
    double t = median_ms([&] {
        for (int i = 0; i < 100; ++i) prim.execute(c.st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, b}});
        c.st.wait();
    });
    report(name, pd.impl_info_str(), t / 100, 256e-9);
}

// The plugin hands oneDNN its own buffers (malloc'd arena, numpy arrays): does the engine accept them?
static void run_user_ptr(Ctx& c, const char* name) {
    memory::desc d({1, 4096}, dt::f32, tag::ab);
    std::vector<float> x(4096, -1.f), y(4096, 5.f);
    x[7] = 3.f;
    auto pd = eltwise_forward::primitive_desc(c.eng, prop_kind::forward_inference, algorithm::eltwise_relu, d, d, 0.f, 0.f);
    memory a(d, c.eng, x.data()), b(d, c.eng, y.data());
    eltwise_forward prim(pd);
    double t = median_ms([&] { prim.execute(c.st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, b}}); c.st.wait(); });
    bool ok = y[7] == 3.f && y[0] == 0.f && static_cast<float*>(b.get_data_handle()) == y.data();
    report(ok ? name : "user pointer: WRONG RESULT", pd.impl_info_str(), t, 4096e-9);
}

int main(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : "";
    if (argc > 2) g_runs = std::atoi(argv[2]);
    std::printf("oneDNN %d.%d.%d, cpu engines %zu\n", dnnl_version()->major, dnnl_version()->minor,
                dnnl_version()->patch, engine::get_count(engine::kind::cpu));
    Ctx c{engine(engine::kind::cpu, 0), stream()};
    c.st = stream(c.eng);
    struct Case { std::string name; std::function<void()> run; };
    std::vector<Case> cases = {
        {"f32 relu 256 (dispatch cost)", [&] { run_tiny(c, "f32 relu 256 (dispatch cost)"); }},
        {"f32 relu 256 x100, 1 wait (per op)", [&] { run_tiny_chain(c, "f32 relu 256 x100, 1 wait (per op)"); }},
        {"f32 relu 4096 on user pointer", [&] { run_user_ptr(c, "f32 relu 4096 on user pointer"); }},
        {"f32 mm 128x256x256 (bert QKV)", [&] { run_matmul(c, "f32 mm 128x256x256 (bert QKV)", 128, 256, 256, dt::f32); }},
        {"f32 mm 128x256x1024 (bert FFN1)", [&] { run_matmul(c, "f32 mm 128x256x1024 (bert FFN1)", 128, 256, 1024, dt::f32); }},
        {"f32 mm 128x1024x256 (bert FFN2)", [&] { run_matmul(c, "f32 mm 128x1024x256 (bert FFN2)", 128, 1024, 256, dt::f32); }},
        {"f32 mm 64x1024x1024 (mlp)", [&] { run_matmul(c, "f32 mm 64x1024x1024 (mlp)", 64, 1024, 1024, dt::f32); }},
        {"f32 mm 1x1024x1024", [&] { run_matmul(c, "f32 mm 1x1024x1024", 1, 1024, 1024, dt::f32); }},
        {"f32 mm 1x256x1024", [&] { run_matmul(c, "f32 mm 1x256x1024", 1, 256, 1024, dt::f32); }},
        {"f32 ip 128x256x1024 (bert FFN1)", [&] { run_ip(c, "f32 ip 128x256x1024 (bert FFN1)", 128, 256, 1024); }},
        {"f32 ip 64x1024x1024 (mlp)", [&] { run_ip(c, "f32 ip 64x1024x1024 (mlp)", 64, 1024, 1024); }},
        {"f32 conv 3x3 64@56", [&] { run_conv(c, "f32 conv 3x3 64@56", {64, 64, 56, 56, 3, 1, 1, 1}, dt::f32); }},
        {"f32 conv 3x3 128@28", [&] { run_conv(c, "f32 conv 3x3 128@28", {128, 128, 28, 28, 3, 1, 1, 1}, dt::f32); }},
        {"f32 conv 3x3 256@14", [&] { run_conv(c, "f32 conv 3x3 256@14", {256, 256, 14, 14, 3, 1, 1, 1}, dt::f32); }},
        {"f32 conv 3x3 512@7", [&] { run_conv(c, "f32 conv 3x3 512@7", {512, 512, 7, 7, 3, 1, 1, 1}, dt::f32); }},
        {"f32 conv 7x7/2 stem", [&] { run_conv(c, "f32 conv 7x7/2 stem", {3, 64, 224, 224, 7, 2, 3, 1}, dt::f32); }},
        {"f32 conv dw3x3 144@56", [&] { run_conv(c, "f32 conv dw3x3 144@56", {144, 144, 56, 56, 3, 1, 1, 144}, dt::f32); }},
        {"bf16 mm 128x256x1024", [&] { run_matmul(c, "bf16 mm 128x256x1024", 128, 256, 1024, dt::bf16); }},
        {"bf16 mm 64x1024x1024", [&] { run_matmul(c, "bf16 mm 64x1024x1024", 64, 1024, 1024, dt::bf16); }},
        {"bf16 conv 3x3 64@56", [&] { run_conv(c, "bf16 conv 3x3 64@56", {64, 64, 56, 56, 3, 1, 1, 1}, dt::bf16); }},
        {"bf16 conv 3x3 256@14", [&] { run_conv(c, "bf16 conv 3x3 256@14", {256, 256, 14, 14, 3, 1, 1, 1}, dt::bf16); }},
        {"u8s8 conv 3x3 64@56", [&] { run_conv(c, "u8s8 conv 3x3 64@56", {64, 64, 56, 56, 3, 1, 1, 1}, dt::u8); }},
        {"u8s8 conv 3x3 256@14", [&] { run_conv(c, "u8s8 conv 3x3 256@14", {256, 256, 14, 14, 3, 1, 1, 1}, dt::u8); }},
        {"u8s8 conv 1x1 64->256@56", [&] { run_conv(c, "u8s8 conv 1x1 64->256@56", {64, 256, 56, 56, 1, 1, 0, 1}, dt::u8); }},
        {"f32 bilstm T32 I128 H128", [&] { run_lstm(c, "f32 bilstm T32 I128 H128", 32, 128, 128); }},
        {"f32 bilstm T64 I128 H256", [&] { run_lstm(c, "f32 bilstm T64 I128 H256", 64, 128, 256); }},
        {"f32 bilstm T128 I128 H256 (bilstm_text)", [&] { run_lstm(c, "f32 bilstm T128 I128 H256 (bilstm_text)", 128, 128, 256); }},
    };
    for (auto& k : cases) {
        // "!x" runs every case whose name lacks x (bf16 under ONEDNN_MAX_CPU_ISA=AVX2 is reference code).
        bool hit = std::strstr(k.name.c_str(), filter[0] == '!' ? filter + 1 : filter) != nullptr;
        if (hit == (filter[0] == '!')) continue;
        try {
            k.run();
        } catch (const dnnl::error& e) {
            std::printf("%-40s unsupported: %s\n", k.name.c_str(), e.what());
        }
    }
    return 0;
}
