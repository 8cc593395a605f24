// Kernel-library measurement: oneDNN direct conv / matmul vs OpenBLAS (im2col + sgemm), f32, 1 thread.
#include <oneapi/dnnl/dnnl.hpp>
#include <cblas.h>
#include <chrono>
#include <vector>
#include <algorithm>
#include <cstdio>
#include <omp.h>
using namespace dnnl; using tag = memory::format_tag; using dt = memory::data_type;
template <class F> double med(F f, int n=30){ std::vector<double> t; f(); for(int i=0;i<n;i++){auto a=std::chrono::steady_clock::now(); f(); t.push_back(std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-a).count());} std::sort(t.begin(),t.end()); return t[n/2]; }
struct Conv { int C,K,H,W,R,s,p; const char* name; };
int main(int argc,char**argv){
  int nt = argc>1? atoi(argv[1]) : 1; omp_set_num_threads(nt); scipy_openblas_set_num_threads(nt);
  engine eng(engine::kind::cpu,0); stream st(eng);
  Conv convs[] = {{64,64,56,56,3,1,1,"res 3x3 64"},{128,128,28,28,3,1,1,"res 3x3 128"},{256,256,14,14,3,1,1,"res 3x3 256"},{3,64,224,224,7,2,3,"res stem 7x7"},{32,192,56,56,1,1,0,"mbv2 1x1 32->192"}};
  for (auto c: convs){
    int OH=(c.H+2*c.p-c.R)/c.s+1, OW=(c.W+2*c.p-c.R)/c.s+1;
    double gf = 2.0*c.K*c.C*c.R*c.R*OH*OW/1e9;
    memory::desc s({1,c.C,c.H,c.W},dt::f32,tag::any), w({c.K,c.C,c.R,c.R},dt::f32,tag::any), d({1,c.K,OH,OW},dt::f32,tag::any);
    auto pd = convolution_forward::primitive_desc(eng, prop_kind::forward_inference, algorithm::convolution_direct, s,w,d,{c.s,c.s},{c.p,c.p},{c.p,c.p});
    memory ms(pd.src_desc(),eng), mw(pd.weights_desc(),eng), md(pd.dst_desc(),eng);
    convolution_forward prim(pd);
    double td = med([&]{ prim.execute(st,{{DNNL_ARG_SRC,ms},{DNNL_ARG_WEIGHTS,mw},{DNNL_ARG_DST,md}}); st.wait();});
    // OpenBLAS: im2col then sgemm [K x CRR] * [CRR x OHOW]
    std::vector<float> x((size_t)c.C*c.H*c.W,1.f), col((size_t)c.C*c.R*c.R*OH*OW), wt((size_t)c.K*c.C*c.R*c.R,0.5f), y((size_t)c.K*OH*OW);
    double tb = med([&]{
      if (!(c.R==1&&c.s==1)) {
      #pragma omp parallel for
      for(int ci=0;ci<c.C;ci++) for(int r=0;r<c.R;r++) for(int q=0;q<c.R;q++){ float* dst=&col[(((size_t)ci*c.R+r)*c.R+q)*OH*OW];
        for(int oh=0;oh<OH;oh++){int ih=oh*c.s-c.p+r; for(int ow=0;ow<OW;ow++){int iw=ow*c.s-c.p+q; dst[oh*OW+ow]=(ih>=0&&ih<c.H&&iw>=0&&iw<c.W)?x[((size_t)ci*c.H+ih)*c.W+iw]:0.f;}}}
      }
      const float* B = (c.R==1&&c.s==1)? x.data(): col.data();
      scipy_cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,c.K,OH*OW,c.C*c.R*c.R,1.f,wt.data(),c.C*c.R*c.R,B,OH*OW,0.f,y.data(),OH*OW);});
    printf("%-18s oneDNN(%s) %7.3f ms %6.1f GF/s | OpenBLAS im2col+sgemm %7.3f ms %6.1f GF/s | ratio %.2fx\n", c.name, pd.impl_info_str(), td, gf/td*1e3, tb, gf/tb*1e3, tb/td);
  }
  int Ms[]={64,128,1}; 
  for(int M: Ms){ int K=1024,N=1024; double gf=2.0*M*N*K/1e9;
    memory::desc a({M,K},dt::f32,tag::ab), b({K,N},dt::f32,tag::any), cc({M,N},dt::f32,tag::ab);
    auto pd = matmul::primitive_desc(eng,a,b,cc); memory ma(pd.src_desc(),eng), mb(pd.weights_desc(),eng), mc(pd.dst_desc(),eng); matmul prim(pd);
    double td = med([&]{prim.execute(st,{{DNNL_ARG_SRC,ma},{DNNL_ARG_WEIGHTS,mb},{DNNL_ARG_DST,mc}}); st.wait();});
    std::vector<float> A((size_t)M*K,1),B((size_t)K*N,1),C((size_t)M*N);
    double tb = med([&]{scipy_cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,M,N,K,1.f,A.data(),K,B.data(),N,0.f,C.data(),N);});
    printf("matmul %4dx1024x1024 oneDNN(%s) %7.3f ms %6.1f GF/s | OpenBLAS sgemm %7.3f ms %6.1f GF/s | ratio %.2fx\n", M, pd.impl_info_str(), td, gf/td*1e3, tb, gf/tb*1e3, tb/td);
  }
}
