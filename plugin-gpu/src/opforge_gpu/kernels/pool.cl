// Pooling over the trailing 1, 2 or 3 axes of [N, C, (D,) (H,) W] (missing axes have size 1),
// one work-item per output: pooling reads each input a handful of times and is bound by memory.
// P: total D H W OD OH OW KD KH KW SD SH SW PD PH PW DD DH DW flag [DP HP WP]
// flag: AvgPool exclude-pad (1) or not (0); MaxPool: index base mode (see WITH_INDICES).

#define POOL_SETUP()                                                        \
    const int i = get_global_id(0);                                         \
    if (i >= P[0]) return;                                                  \
    const int D = P[1], H = P[2], W = P[3], OD = P[4], OH = P[5], OW = P[6]; \
    const int KD = P[7], KH = P[8], KW = P[9], SD = P[10], SH = P[11], SW = P[12]; \
    const int PD = P[13], PH = P[14], PW = P[15], DD = P[16], DH = P[17], DW = P[18]; \
    const int ow = i % OW, oh = (i / OW) % OH, od = (i / (OW * OH)) % OD;  \
    const int nc = i / (OW * OH * OD);                                      \
    const int base = nc * D * H * W;

#ifdef MAX_POOL
__kernel void max_pool(__global const X_T* x, __global Y_T* y, __global I_T* ind,
                       __global const int* P) {
    POOL_SETUP();
    X_CT best = (X_CT)0;
    int besti = -1;
    for (int kd = 0; kd < KD; ++kd) {
        const int id = od * SD - PD + kd * DD;
        if (id < 0 || id >= D) continue;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                const int at = (id * H + ih) * W + iw;
                const X_CT v = LOAD_X(x, base + at);
                // the first NaN wins and stays (NaN propagates, as in ReduceMax)
                if (besti < 0 || v > best || (v != v && best == best)) { best = v; besti = at; }
            }
        }
    }
#if X_FLOAT
    if (besti < 0) best = -INFINITY;
#endif
    STORE_Y(y, i, best);
#if WITH_INDICES
    // P[19] = 1: indices count from the start of the whole tensor (axis 0), else per channel.
    ind[i] = (I_T)(P[19] ? base + besti : besti);
#endif
}
#endif

#ifdef AVG_POOL
__kernel void avg_pool(__global const X_T* x, __global Y_T* y, __global const int* P) {
    POOL_SETUP();
    const int exclude_pad = P[19];
    // the padded extent: windows may hang over the end by the end padding only
    const int DP = P[20], HP = P[21], WP = P[22];
    const int d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
    float sum = 0.0f;
    int count = 0, padded = 0;
    for (int kd = 0; kd < KD; ++kd) {
        const int id = d0 + kd * DD;
        if (id >= DP - PD) break;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = h0 + kh * DH;
            if (ih >= HP - PH) break;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = w0 + kw * DW;
                if (iw >= WP - PW) break;
                ++padded;
                if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += LOAD_X(x, base + (id * H + ih) * W + iw);
                ++count;
            }
        }
    }
    const int div = exclude_pad ? count : padded;
    STORE_Y(y, i, div > 0 ? sum / (float)div : 0.0f);
}
#endif
