// Direct convolutions over up to three spatial axes, one work-item per output element: 3-D
// convolutions and transposed convolutions (ConvolutionBackpropData), where a GEMM formulation
// would need a scatter. Missing spatial axes have size 1. Epilogue as in gemm.cl.
// P: total Cin Cout CinG CoutG D H W OD OH OW KD KH KW SD SH SW PD PH PW DD DH DW p0 p1

#if ACT == 1
#define ACTIVATE(v) ((v) < 0.0f ? 0.0f : (v)) /* NaN stays NaN (fmax would drop it) */
#elif ACT == 2
#define ACTIVATE(v) (isnan(v) ? (v) : fmin(fmax((v), p0), p1))
#else
#define ACTIVATE(v) (v)
#endif

#define CONV_SETUP()                                                             \
    const int i = get_global_id(0);                                              \
    if (i >= P[0]) return;                                                       \
    const int Cin = P[1], Cout = P[2], CinG = P[3], CoutG = P[4];                \
    const int D = P[5], H = P[6], W = P[7], OD = P[8], OH = P[9], OW = P[10];     \
    const int KD = P[11], KH = P[12], KW = P[13], SD = P[14], SH = P[15], SW = P[16]; \
    const int PD = P[17], PH = P[18], PW = P[19], DD = P[20], DH = P[21], DW = P[22]; \
    const float p0 = as_float(P[23]), p1 = as_float(P[24]);                      \
    const int ow = i % OW, oh = (i / OW) % OH, od = (i / (OW * OH)) % OD;       \
    const int co = (i / (OW * OH * OD)) % Cout;                                  \
    const int b = i / (OW * OH * OD * Cout);                                     \
    const int g = co / CoutG, col = co - g * CoutG;                              \
    const int KV = KD * KH * KW;

#define CONV_STORE()                                                             \
    ACC_T v = acc;                                                               \
    if (HAS_BIAS) v += LOAD_BI(bias, co);                                        \
    if (HAS_RES) v += LOAD_R(res, i);                                            \
    STORE_Y(y, i, ACTIVATE(v));

#ifdef CONV_FWD
// w: [Cout][CinG][KD][KH][KW]
__kernel void conv_nd(__global const X_T* x, __global const W_T* w, __global const BI_T* bias,
                      __global const R_T* res, __global Y_T* y, __global const int* P) {
    CONV_SETUP();
    ACC_T acc = 0;
    for (int ci = 0; ci < CinG; ++ci) {
        const int xb = (b * Cin + g * CinG + ci) * D * H * W;
        const int wb = (co * CinG + ci) * KV;
        for (int kd = 0; kd < KD; ++kd) {
            const int id = od * SD - PD + kd * DD;
            if (id < 0 || id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                const int ih = oh * SH - PH + kh * DH;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    const int iw = ow * SW - PW + kw * DW;
                    if (iw < 0 || iw >= W) continue;
                    acc += (ACC_T)LOAD_X(x, xb + (id * H + ih) * W + iw) *
                           (ACC_T)LOAD_W(w, wb + (kd * KH + kh) * KW + kw);
                }
            }
        }
    }
    CONV_STORE();
}
#endif

#ifdef CONV_BWD
// Transposed: output position o reads input positions i with i * S + k * DIL == o + pad.
// w: [G][CinG][CoutG][KD][KH][KW] (the model's [Cin][CoutG][K...] for ungrouped ones).
__kernel void conv_transposed(__global const X_T* x, __global const W_T* w, __global const BI_T* bias,
                              __global const R_T* res, __global Y_T* y, __global const int* P) {
    CONV_SETUP();
    ACC_T acc = 0;
    const int fd = od + PD, fh = oh + PH, fw = ow + PW;
    for (int ci = 0; ci < CinG; ++ci) {
        const int xb = (b * Cin + g * CinG + ci) * D * H * W;
        const int wb = ((g * CinG + ci) * CoutG + col) * KV;
        for (int kd = 0; kd < KD; ++kd) {
            const int td = fd - kd * DD;
            if (td < 0 || td % SD) continue;
            const int id = td / SD;
            if (id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                const int th = fh - kh * DH;
                if (th < 0 || th % SH) continue;
                const int ih = th / SH;
                if (ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    const int tw = fw - kw * DW;
                    if (tw < 0 || tw % SW) continue;
                    const int iw = tw / SW;
                    if (iw >= W) continue;
                    acc += (ACC_T)LOAD_X(x, xb + (id * H + ih) * W + iw) *
                           (ACC_T)LOAD_W(w, wb + (kd * KH + kh) * KW + kw);
                }
            }
        }
    }
    CONV_STORE();
}
#endif
