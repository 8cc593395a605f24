// AdaptiveAvgPool, AdaptiveMaxPool (library/adaptive_pool.py).

#ifdef ADAPTIVE_POOL
// One work-item per output. Bin o of an axis of size L pooled to O covers
// [floor(o * L / O), ceil((o + 1) * L / O)). Spatial axes padded to three (size 1).
// P: total D H W OD OH OW
__kernel void adaptive_pool(__global const X_T* x, __global Y_T* y, __global I_T* ind, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int D = P[1], H = P[2], W = P[3], OD = P[4], OH = P[5], OW = P[6];
    const int ow = i % OW, oh = (i / OW) % OH, od = (i / (OW * OH)) % OD;
    const int nc = i / (OW * OH * OD);
    const int d0 = (od * D) / OD, d1 = ((od + 1) * D + OD - 1) / OD;
    const int h0 = (oh * H) / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
    const int w0 = (ow * W) / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
    const int plane = D * H * W;
    __global const X_T* xp = x + (long)nc * plane;
#ifdef AVG
    float s = 0.0f;
    for (int d = d0; d < d1; ++d)
        for (int h = h0; h < h1; ++h)
            for (int w = w0; w < w1; ++w) s += (float)LOAD_X(xp, (d * H + h) * W + w);
    STORE_Y(y, i, s / (float)((d1 - d0) * (h1 - h0) * (w1 - w0)));
#else
    int best_i = (d0 * H + h0) * W + w0;
    X_CT best = LOAD_X(xp, best_i);
    for (int d = d0; d < d1; ++d)
        for (int h = h0; h < h1; ++h)
            for (int w = w0; w < w1; ++w) {
                const int k = (d * H + h) * W + w;
                const X_CT v = LOAD_X(xp, k);
#if X_FLOAT
                if (!isnan(best) && (v > best || isnan(v))) { best = v; best_i = k; }
#else
                if (v > best) { best = v; best_i = k; }
#endif
            }
    STORE_Y(y, i, best);
#if WITH_INDICES
    ind[i] = (I_T)best_i;
#endif
#endif
}
#endif
