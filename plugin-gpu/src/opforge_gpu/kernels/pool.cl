// Pooling over the two trailing axes of [N, C, H, W] (1-D pooling uses H = 1), one work-item
// per output: pooling reads each input a handful of times and is bound by memory, not math.
// P: total H W OH OW KH KW SH SW PH PW DH DW flag
// flag: AvgPool exclude-pad (1) or not (0); MaxPool: index base mode (see WITH_INDICES).

#ifdef MAX_POOL
__kernel void max_pool(__global const X_T* x, __global Y_T* y, __global I_T* ind,
                       __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int H = P[1], W = P[2], OH = P[3], OW = P[4], KH = P[5], KW = P[6];
    const int SH = P[7], SW = P[8], PH = P[9], PW = P[10], DH = P[11], DW = P[12];
    const int ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);
    const int base = nc * H * W;
    float best = -INFINITY;
    int besti = -1;
    for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            const int iw = ow * SW - PW + kw * DW;
            if (iw < 0 || iw >= W) continue;
            const float v = LOAD_X(x, base + ih * W + iw);
            if (v > best || besti < 0) { best = v; besti = ih * W + iw; }
        }
    }
    STORE_Y(y, i, best);
#if WITH_INDICES
    // P[13] = 1: indices count from the start of the whole tensor (axis 0), else per channel.
    ind[i] = (I_T)(P[13] ? base + besti : besti);
#endif
}
#endif

#ifdef AVG_POOL
__kernel void avg_pool(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int H = P[1], W = P[2], OH = P[3], OW = P[4], KH = P[5], KW = P[6];
    const int SH = P[7], SW = P[8], PH = P[9], PW = P[10];
    const int exclude_pad = P[13];
    // the padded extent: windows may hang over the end by the end padding only
    const int HP = P[14], WP = P[15];
    const int ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);
    const int base = nc * H * W;
    const int h0 = oh * SH - PH, w0 = ow * SW - PW;
    float sum = 0.0f;
    int count = 0, padded = 0;
    for (int kh = 0; kh < KH; ++kh) {
        const int ih = h0 + kh;
        if (ih >= HP - PH) break;
        for (int kw = 0; kw < KW; ++kw) {
            const int iw = w0 + kw;
            if (iw >= WP - PW) break;
            ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            sum += LOAD_X(x, base + ih * W + iw);
            ++count;
        }
    }
    const int div = exclude_pad ? count : padded;
    STORE_Y(y, i, div > 0 ? sum / (float)div : 0.0f);
}
#endif
