// DFT/IDFT/RDFT/IRDFT and DeformableConvolution (library/spectral.py).

#ifdef DFT_AXIS
// One transformed axis of a tensor seen as [outer, L, inner] (complex elements are two floats,
// real and imaginary; IN_COMPLEX/OUT_COMPLEX say which sides are complex). One work-item per
// output element: a direct O(n) sum. The input is cropped or zero-padded to the transform length
// n by reading only its first min(Lin, n) elements (Hermitian C2R: its first n / 2 + 1).
// Twiddles use (j * k) mod n, kept exact by an incremental index.
// MODE 0: complex to complex (INVERSE: e^+, scaled 1 / n), 1: real to complex (one-sided),
// 2: one-sided complex to real (inverse, scaled 1 / n).
// P: total outer Lin Lout inner n
__kernel void dft_axis(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int Lin = P[2], Lout = P[3], inner = P[4], n = P[5];
    const int inn = i % inner;
    const int k = (i / inner) % Lout;
    const int o = i / (inner * Lout);
    const long base = (long)o * Lin * inner + inn;
    const float fn = (float)n;
#if MODE == 2
    const int m = min(Lin, n / 2 + 1);
    float acc = 0.0f;
    int idx = 0;
    for (int j = 0; j < m; ++j) {
        const long p = (base + (long)j * inner) * 2;
        const float xr = LOAD_X(x, p);
        const float t = (2.0f * (float)idx) / fn;
        if (j == 0 || 2 * j == n) {
            acc += xr * cospi(t);
        } else {
            const float xi = LOAD_X(x, p + 1);
            acc += 2.0f * (xr * cospi(t) - xi * sinpi(t));
        }
        idx += k;
        if (idx >= n) idx -= n;
    }
    STORE_Y(y, i, acc / fn);
#else
    const int m = min(Lin, n);
    float re = 0.0f, im = 0.0f;
    int idx = 0;
    for (int j = 0; j < m; ++j) {
        const float t = (2.0f * (float)idx) / fn;
        const float c = cospi(t);
#if INVERSE
        const float s = sinpi(t);
#else
        const float s = -sinpi(t);
#endif
#if MODE == 1
        const float xr = LOAD_X(x, base + (long)j * inner);
        re += xr * c;
        im += xr * s;
#else
        const long p = (base + (long)j * inner) * 2;
        const float xr = LOAD_X(x, p), xi = LOAD_X(x, p + 1);
        re += xr * c - xi * s;
        im += xr * s + xi * c;
#endif
        idx += k;
        if (idx >= n) idx -= n;
    }
#if INVERSE
    re /= fn;
    im /= fn;
#endif
    STORE_Y(y, 2 * (long)i, re);
    STORE_Y(y, 2 * (long)i + 1, im);
#endif
}
#endif

#ifdef DEFORM_CONV
// One work-item per output [n, co, oh, ow]: the sum over the group's input channels and the
// kernel taps of filter x (mask x) the data sampled bilinearly at the displaced tap, as
// opforge's reference (OpenVINO's) samples: BILINEAR_PAD 1: points within one pixel outside the
// map interpolate with zeros; 0: only points inside sample, neighbours clamped to the last row/column.
float deform_sample(__global const X_T* img, const int H, const int W, const float y, const float x) {
#if BILINEAR_PAD
    if (!(y > -1.0f && y < (float)H && x > -1.0f && x < (float)W)) return 0.0f;
    const float fy = floor(y), fx = floor(x);
    const int y0 = (int)fy, x0 = (int)fx, y1 = y0 + 1, x1 = x0 + 1;
#else
    if (!(y >= 0.0f && y < (float)H && x >= 0.0f && x < (float)W)) return 0.0f;
    const float fy = floor(y), fx = floor(x);
    const int y0 = (int)fy, x0 = (int)fx;
    const int y1 = min((int)ceil(y), H - 1), x1 = min((int)ceil(x), W - 1);
#endif
    const float ly = y - fy, lx = x - fx;
    float v = 0.0f;
    if (y0 >= 0 && y0 < H) {
        if (x0 >= 0 && x0 < W) v += (1.0f - ly) * (1.0f - lx) * LOAD_X(img, y0 * W + x0);
        if (x1 >= 0 && x1 < W) v += (1.0f - ly) * lx * LOAD_X(img, y0 * W + x1);
    }
    if (y1 >= 0 && y1 < H) {
        if (x0 >= 0 && x0 < W) v += ly * (1.0f - lx) * LOAD_X(img, y1 * W + x0);
        if (x1 >= 0 && x1 < W) v += ly * lx * LOAD_X(img, y1 * W + x1);
    }
    return v;
}

// P: total C H W Cout OH OW Cg KH KW group deformable_group sy sx py px dy dx
__kernel void deform_conv(__global const X_T* x, __global const X_T* off, __global const X_T* w,
                          __global const X_T* mask, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], H = P[2], W = P[3], Cout = P[4], OH = P[5], OW = P[6], Cg = P[7], KH = P[8], KW = P[9];
    const int group = P[10], DG = P[11];
    const int ow = i % OW, oh = (i / OW) % OH, co = (i / (OW * OH)) % Cout, b = i / (OW * OH * Cout);
    const int gi = co / (Cout / group);
    const int per = C / DG;
    const long plane = (long)OH * OW;
    const long pix = (long)oh * OW + ow;
    const float by = (float)(oh * P[12] - P[14]), bx = (float)(ow * P[13] - P[15]);
    float acc = 0.0f;
    for (int ci = 0; ci < Cg; ++ci) {
        const int c = gi * Cg + ci;
        const int g = c / per;
        __global const X_T* img = x + ((long)b * C + c) * H * W;
        for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
                const int tap = (g * KH + kh) * KW + kw;
                const long oc = ((long)b * 2 * DG * KH * KW + 2 * tap) * plane + pix;
                const float sy = by + (float)(kh * P[16]) + LOAD_X(off, oc);
                const float sx = bx + (float)(kw * P[17]) + LOAD_X(off, oc + plane);
                float v = deform_sample(img, H, W, sy, sx);
#if HAS_MASK
                v *= LOAD_X(mask, ((long)b * DG * KH * KW + tap) * plane + pix);
#endif
                acc += v * LOAD_X(w, (((long)co * Cg + ci) * KH + kh) * KW + kw);
            }
    }
    STORE_Y(y, i, acc);
}
#endif
