// Einsum, adaptive pooling, Eye (library/extra.py).

#ifdef EINSUM
// One work-item per output element: the sum over every combination of the summed labels of the
// product of the operands. Each operand is read through one stride per label (0: broadcast; a
// label repeated within an operand adds its strides: the diagonal).
// P: n nout out_dims[nout] nsum sum_dims[nsum] then per operand: strides[nout + nsum]
__kernel void einsum(__global const X_T* a0, __global const X_T* a1, __global const X_T* a2,
                     __global const X_T* a3, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int nout = P[1];
    __global const int* od = P + 2;
    const int nsum = P[2 + nout];
    __global const int* sd = P + 3 + nout;
    __global const int* st = P + 3 + nout + nsum;
    const int nl = nout + nsum;
    int base[NOPS];
    for (int k = 0; k < NOPS; ++k) base[k] = 0;
    int r = i;
    for (int d = nout - 1; d >= 0; --d) {
        const int c = r % od[d];
        r /= od[d];
        for (int k = 0; k < NOPS; ++k) base[k] += c * st[k * nl + d];
    }
    int count = 1;
    for (int d = 0; d < nsum; ++d) count *= sd[d];
    ACC_T acc = (ACC_T)0;
    for (int j = 0; j < count; ++j) {
        int off[NOPS];
        for (int k = 0; k < NOPS; ++k) off[k] = base[k];
        int rr = j;
        for (int d = nsum - 1; d >= 0; --d) {
            const int c = rr % sd[d];
            rr /= sd[d];
            for (int k = 0; k < NOPS; ++k) off[k] += c * st[k * nl + nout + d];
        }
        ACC_T p = (ACC_T)LOAD_X(a0, off[0]);
#if NOPS > 1
        p *= (ACC_T)LOAD_X(a1, off[1]);
#endif
#if NOPS > 2
        p *= (ACC_T)LOAD_X(a2, off[2]);
#endif
#if NOPS > 3
        p *= (ACC_T)LOAD_X(a3, off[3]);
#endif
        acc += p;
    }
    STORE_Y(y, i, acc);
}
#endif

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

#ifdef EYE
// P: n rows cols diagonal
__kernel void eye(__global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int cols = P[2];
    const int c = i % cols, r = (i / cols) % P[1];
    STORE_Y(y, i, (c - r == P[3]) ? 1 : 0);
}
#endif

#ifdef ROI_ALIGN
// One work-item per output [roi, c, ph, pw]: the mean (or the max, from 0) of sy x sx bilinear
// samples. P: total C H W PH PW sampling_ratio aligned_mode(0 asym, 1 half_pixel_for_nn,
// 2 half_pixel) max_mode (0 avg, 1 max from 0, 2 onnx_max) scale(bits) n_img
// corner_max: the largest weighted corner term (ONNX's max, mode 2) instead of their sum
float roi_sample(__global const X_T* img, const int H, const int W, float y, float x, const int corner_max) {
    if (y < -1.0f || y > (float)H || x < -1.0f || x > (float)W) return 0.0f;
    y = fmax(y, 0.0f);
    x = fmax(x, 0.0f);
    int y0 = (int)floor(y), x0 = (int)floor(x), y1, x1;
    if (y0 >= H - 1) { y0 = y1 = H - 1; y = (float)y0; } else { y1 = y0 + 1; }
    if (x0 >= W - 1) { x0 = x1 = W - 1; x = (float)x0; } else { x1 = x0 + 1; }
    const float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    const float t0 = hy * hx * LOAD_X(img, y0 * W + x0), t1 = hy * lx * LOAD_X(img, y0 * W + x1);
    const float t2 = ly * hx * LOAD_X(img, y1 * W + x0), t3 = ly * lx * LOAD_X(img, y1 * W + x1);
    return corner_max ? fmax(fmax(t0, t1), fmax(t2, t3)) : t0 + t1 + t2 + t3;
}

__kernel void roi_align(__global const X_T* x, __global const R_T* rois, __global const I_T* bidx,
                        __global Y_T* y, __global const int* P, __global int* err, const int check) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], H = P[2], W = P[3], PH = P[4], PW = P[5], ratio = P[6], aligned = P[7];
    const int max_mode = P[8];
    const float scale = as_float(P[9]);
    const int pw = i % PW, ph = (i / PW) % PH, c = (i / (PW * PH)) % C, k = i / (PW * PH * C);
    const long b = (long)bidx[k];
    if (b < 0 || b >= P[10]) {
        if (c == 0 && ph == 0 && pw == 0) report_index(err, check, b, P[10], k);
        STORE_Y(y, i, 0.0f);
        return;
    }
    float v[4];
    for (int j = 0; j < 4; ++j) {
        const float r = LOAD_R(rois, k * 4 + j);
        v[j] = aligned == 2 ? (r + 0.5f) * scale - 0.5f : r * scale - (aligned == 1 ? 0.5f : 0.0f);
    }
    float rw = v[2] - v[0], rh = v[3] - v[1];
    if (aligned == 0) { rw = fmax(rw, 1.0f); rh = fmax(rh, 1.0f); }
    const float bw = rw / (float)PW, bh = rh / (float)PH;
    const int sx = ratio ? ratio : max((int)ceil(bw), 1);
    const int sy = ratio ? ratio : max((int)ceil(bh), 1);
    __global const X_T* img = x + ((long)b * C + c) * H * W;
    float acc = 0.0f;
    for (int iy = 0; iy < sy; ++iy) {
        const float yy = (float)ph * bh + ((float)iy + 0.5f) * (bh / (float)sy) + v[1];
        for (int ix = 0; ix < sx; ++ix) {
            const float xx = (float)pw * bw + ((float)ix + 0.5f) * (bw / (float)sx) + v[0];
            const float s = roi_sample(img, H, W, yy, xx, max_mode == 2);
            if (max_mode == 2) acc = (iy == 0 && ix == 0) ? s : fmax(acc, s);  // from the first sample
            else acc = max_mode ? fmax(acc, s) : acc + s;
        }
    }
    STORE_Y(y, i, max_mode ? acc : acc / (float)(sx * sy));
}
#endif

#ifdef GRID_SAMPLE
// One work-item per output [n, c, ho, wo] (4-D; grid_sample_3d below for 5-D). P: total C H W HO WO align_corners mode(0 bilinear,
// 1 bicubic, 2 nearest) padding(0 zeros, 1 border, 2 reflection)
float gs_reflect(float x, const float lo, const float hi) {
    const float span = hi - lo;
    if (span <= 0.0f) return lo;
    if (x < lo) {
        const float d = lo - x, n = floor(d / span), r = d - n * span;
        return fmod(n, 2.0f) == 0.0f ? lo + r : hi - r;
    }
    if (x > hi) {
        const float d = x - hi, n = floor(d / span), r = d - n * span;
        return fmod(n, 2.0f) == 0.0f ? hi - r : lo + r;
    }
    return x;
}

float gs_pixel(__global const X_T* img, const int H, const int W, int iy, int ix, const int pad,
               const float lo_y, const float hi_y, const float lo_x, const float hi_x) {
    if (pad == 0) {
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) return 0.0f;
    } else if (pad == 2) {
        iy = (int)trunc(gs_reflect((float)iy, lo_y, hi_y));
        ix = (int)trunc(gs_reflect((float)ix, lo_x, hi_x));
    }
    iy = clamp(iy, 0, H - 1);
    ix = clamp(ix, 0, W - 1);
    return LOAD_X(img, iy * W + ix);
}

void gs_cubic(const float t, float* w) {
    const float a = -0.75f, x = fabs(t);
    w[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
    w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
    w[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
    w[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

__kernel void grid_sample(__global const X_T* x, __global const G_T* grid, __global Y_T* y,
                          __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], H = P[2], W = P[3], HO = P[4], WO = P[5], align = P[6], mode = P[7], pad = P[8];
    const int wo = i % WO, ho = (i / WO) % HO, c = (i / (WO * HO)) % C, n = i / (WO * HO * C);
    const int g = ((n * HO + ho) * WO + wo) * 2;
    const float gx = LOAD_G(grid, g), gy = LOAD_G(grid, g + 1);
    float cy = align ? (gy + 1.0f) / 2.0f * (float)(H - 1) : ((gy + 1.0f) * (float)H - 1.0f) / 2.0f;
    float cx = align ? (gx + 1.0f) / 2.0f * (float)(W - 1) : ((gx + 1.0f) * (float)W - 1.0f) / 2.0f;
    const float lo_y = align ? 0.0f : -0.5f, hi_y = align ? (float)H - 1.0f : (float)H - 0.5f;
    const float lo_x = align ? 0.0f : -0.5f, hi_x = align ? (float)W - 1.0f : (float)W - 0.5f;
    if (mode == 2) { cy = rint(cy); cx = rint(cx); }
    if (pad == 1 && mode != 1) {
        if (cy < lo_y || cy > hi_y) cy = clamp(cy, 0.0f, (float)(H - 1));
        if (cx < lo_x || cx > hi_x) cx = clamp(cx, 0.0f, (float)(W - 1));
    } else if (pad == 2) {
        cy = gs_reflect(cy, lo_y, hi_y);
        cx = gs_reflect(cx, lo_x, hi_x);
    }
    __global const X_T* img = x + ((long)n * C + c) * H * W;
    float out;
    if (mode == 2) {
        out = gs_pixel(img, H, W, (int)cy, (int)cx, pad, lo_y, hi_y, lo_x, hi_x);
    } else {
        const float by = floor(cy), bx = floor(cx), fy = cy - by, fx = cx - bx;
        const int y0 = (int)by, x0 = (int)bx;
        out = 0.0f;
        if (mode == 0) {
            const float wy[2] = {1.0f - fy, fy}, wx[2] = {1.0f - fx, fx};
            for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b)
                    out += wy[a] * wx[b] * gs_pixel(img, H, W, y0 + a, x0 + b, pad, lo_y, hi_y, lo_x, hi_x);
        } else {
            float wy[4], wx[4];
            gs_cubic(fy, wy);
            gs_cubic(fx, wx);
            for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b)
                    out += wy[a] * wx[b] * gs_pixel(img, H, W, y0 + a - 1, x0 + b - 1, pad, lo_y, hi_y, lo_x, hi_x);
        }
    }
    STORE_Y(y, i, out);
}

// Volumetric: one work-item per output [n, c, do, ho, wo]; grid [N, DO, HO, WO, 3] holds x, y, z.
// Nearest or trilinear (mode 0 / 2 as above). P: total C D H W DO HO WO align_corners mode padding
float gs_voxel(__global const X_T* img, const int* dims, int* at, const int pad, const float* lo, const float* hi) {
    for (int k = 0; k < 3; ++k) {
        if (pad == 0) {
            if (at[k] < 0 || at[k] >= dims[k]) return 0.0f;
        } else if (pad == 2) {
            at[k] = (int)trunc(gs_reflect((float)at[k], lo[k], hi[k]));
        }
        at[k] = clamp(at[k], 0, dims[k] - 1);
    }
    return LOAD_X(img, ((long)at[0] * dims[1] + at[1]) * dims[2] + at[2]);
}

__kernel void grid_sample_3d(__global const X_T* x, __global const G_T* grid, __global Y_T* y,
                             __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], align = P[8], mode = P[9], pad = P[10];
    const int dims[3] = {P[2], P[3], P[4]};
    const int DO = P[5], HO = P[6], WO = P[7];
    const int pos = i % (DO * HO * WO), c = (i / (DO * HO * WO)) % C, n = i / (DO * HO * WO * C);
    const long g = ((long)n * DO * HO * WO + pos) * 3;
    float co[3], lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        const float v = LOAD_G(grid, g + 2 - k), size = (float)dims[k];
        co[k] = align ? (v + 1.0f) / 2.0f * (size - 1.0f) : ((v + 1.0f) * size - 1.0f) / 2.0f;
        lo[k] = align ? 0.0f : -0.5f;
        hi[k] = align ? size - 1.0f : size - 0.5f;
        if (mode == 2) co[k] = rint(co[k]);
        if (pad == 1) {
            if (co[k] < lo[k] || co[k] > hi[k]) co[k] = clamp(co[k], 0.0f, size - 1.0f);
        } else if (pad == 2) {
            co[k] = gs_reflect(co[k], lo[k], hi[k]);
        }
    }
    __global const X_T* img = x + ((long)n * C + c) * dims[0] * dims[1] * dims[2];
    float out = 0.0f;
    if (mode == 2) {
        int at[3] = {(int)co[0], (int)co[1], (int)co[2]};
        out = gs_voxel(img, dims, at, pad, lo, hi);
    } else {
        float base[3], frac[3];
        for (int k = 0; k < 3; ++k) { base[k] = floor(co[k]); frac[k] = co[k] - base[k]; }
        for (int corner = 0; corner < 8; ++corner) {
            int at[3];
            float w = 1.0f;
            for (int k = 0; k < 3; ++k) {
                const int bit = (corner >> (2 - k)) & 1;
                at[k] = (int)base[k] + bit;
                w *= bit ? frac[k] : 1.0f - frac[k];
            }
            out += w * gs_voxel(img, dims, at, pad, lo, hi);
        }
    }
    STORE_Y(y, i, out);
}
#endif

#ifdef COL2IM
// One work-item per output [n, c, oz, oy, ox]: the sum of every block element landing on it.
// 2-D images run as volumes of depth 1. P: total C, then per axis (z, y, x) in turn: output size,
// kernel size, block count, stride, dilation, begin padding.
__kernel void col2im(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1];
    __global const int* O = P + 2;   // OD OH OW
    __global const int* K = P + 5;   // KD KH KW
    __global const int* NB = P + 8;  // NBD NBH NBW
    __global const int* S = P + 11;
    __global const int* D = P + 14;
    __global const int* PB = P + 17;
    const int ox = i % O[2], oy = (i / O[2]) % O[1], oz = (i / (O[2] * O[1])) % O[0];
    const int c = (i / (O[2] * O[1] * O[0])) % C, n = i / (O[2] * O[1] * O[0] * C);
    const int pz = oz + PB[0], py = oy + PB[1], px = ox + PB[2];
    const long kvol = (long)K[0] * K[1] * K[2], nbvol = (long)NB[0] * NB[1] * NB[2];
    X_CT acc = 0;
    for (int kz = 0; kz < K[0]; ++kz) {
        const int tz = pz - kz * D[0];
        if (tz < 0 || tz % S[0]) continue;
        const int bz = tz / S[0];
        if (bz >= NB[0]) continue;
        for (int ky = 0; ky < K[1]; ++ky) {
            const int ty = py - ky * D[1];
            if (ty < 0 || ty % S[1]) continue;
            const int by = ty / S[1];
            if (by >= NB[1]) continue;
            for (int kx = 0; kx < K[2]; ++kx) {
                const int tx = px - kx * D[2];
                if (tx < 0 || tx % S[2]) continue;
                const int bx = tx / S[2];
                if (bx >= NB[2]) continue;
                const long kidx = ((long)kz * K[1] + ky) * K[2] + kx;
                const long bidx = ((long)bz * NB[1] + by) * NB[2] + bx;
                acc += LOAD_X(x, ((long)(n * C + c) * kvol + kidx) * nbvol + bidx);
            }
        }
    }
    STORE_Y(y, i, acc);
}
#endif

#ifdef RNN_SEQ
// RNNSequence / GRUSequence / LSTMSequence (CELL 0, 1, 2): one work-group per (batch, direction)
// walks the whole sequence; the states live in local memory, each work-item computes the units
// j = lid, lid + WG, ... of a step, barriers separate the steps. Y beyond a sequence's length is
// zero; final states of an empty sequence are zero. ACT_F/ACT_G/ACT_H are the activations.
// P: T I D direction(0 forward, 1 reverse, 2 bidirectional) clip(bits) lbr
#define CLIPV(v) (clip > 0.0f ? clamp((v), -clip, clip) : (v))

float dotx(__global const X_T* w, const int row, const int n, __global const X_T* v) {
    float s = 0.0f;
    for (int k = 0; k < n; ++k) s += LOAD_X(w, row * n + k) * LOAD_X(v, k);
    return s;
}

float doth(__global const X_T* w, const int row, __local const float* v) {
    float s = 0.0f;
    for (int k = 0; k < HS; ++k) s += LOAD_X(w, row * HS + k) * v[k];
    return s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rnn_seq(__global const X_T* x, __global const X_T* h0, __global const X_T* c0, __global const L_T* lens,
             __global const X_T* W, __global const X_T* R, __global const X_T* Bv, __global Y_T* y,
             __global Y_T* ho, __global Y_T* co, __global const int* P) {
    const int T = P[0], I = P[1], D = P[2], dir = P[3];
    const float clip = as_float(P[4]);
    const int lbr = P[5];
    const int grp = get_group_id(0), lid = get_local_id(0);
    const int b = grp / D, d = grp % D;
    __local float h[HS], c[HS], nh[HS], nc[HS], aux[HS], zt[HS];
    const int sbase = (b * D + d) * HS;
    for (int j = lid; j < HS; j += WG) {
        h[j] = LOAD_X(h0, sbase + j);
#if CELL == 2
        c[j] = LOAD_X(c0, sbase + j);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const long lv = (long)lens[b];
    const int len = (int)(lv < 0 ? 0 : (lv > T ? T : lv));
    const int reverse = dir == 1 || d == 1;
    __global const X_T* Wd = W + (long)d * GATES * HS * I;
    __global const X_T* Rd = R + (long)d * GATES * HS * HS;
    __global const X_T* Bd = Bv + (long)d * NBIAS * HS;
    for (int t = len; t < T; ++t)
        for (int j = lid; j < HS; j += WG) STORE_Y(y, ((b * D + d) * T + t) * HS + j, 0.0f);
    for (int step = 0; step < len; ++step) {
        const int t = reverse ? len - 1 - step : step;
        __global const X_T* xp = x + ((long)b * T + t) * I;
#if CELL == 1
        if (!lbr) {
            for (int j = lid; j < HS; j += WG) {
                const float r = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
                zt[j] = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
                aux[j] = r * h[j];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#endif
        for (int j = lid; j < HS; j += WG) {
#if CELL == 0
            nh[j] = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
#elif CELL == 1
            float z, hh;
            if (lbr) {
                z = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
                const float r = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
                hh = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp)
                                 + r * (doth(Rd, 2 * HS + j, h) + LOAD_X(Bd, 3 * HS + j)) + LOAD_X(Bd, 2 * HS + j)));
            } else {
                z = zt[j];
                hh = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp) + doth(Rd, 2 * HS + j, aux) + LOAD_X(Bd, 2 * HS + j)));
            }
            nh[j] = (1.0f - z) * hh + z * h[j];
#else
            const float gf = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
            const float gi = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
            const float gc = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp) + doth(Rd, 2 * HS + j, h) + LOAD_X(Bd, 2 * HS + j)));
            const float go = ACT_F(CLIPV(dotx(Wd, 3 * HS + j, I, xp) + doth(Rd, 3 * HS + j, h) + LOAD_X(Bd, 3 * HS + j)));
            nc[j] = gf * c[j] + gi * gc;
            nh[j] = go * ACT_H(nc[j]);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = lid; j < HS; j += WG) {
            h[j] = nh[j];
#if CELL == 2
            c[j] = nc[j];
#endif
            STORE_Y(y, ((b * D + d) * T + t) * HS + j, nh[j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = lid; j < HS; j += WG) {
        STORE_Y(ho, sbase + j, len > 0 ? h[j] : 0.0f);
#if CELL == 2
        STORE_Y(co, sbase + j, len > 0 ? c[j] : 0.0f);
#endif
    }
}
#endif

#ifdef ROLL_REVERSE
// Roll and Reverse: y[c] = x[source of c], elements moved as raw bits. Per axis the source
// coordinate is dim-1-c (flip) or (c - shift) mod dim (shift already reduced to 0..dim-1).
// P: n rank dims[rank] shift[rank] flip[rank]
__kernel void roll_reverse(__global const RAW_T* x, __global RAW_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    int r = i, off = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
        const int dim = P[2 + d];
        const int c = r % dim;
        r /= dim;
        int s = P[2 + 2 * rank + d] ? dim - 1 - c : c - P[2 + rank + d];
        if (s < 0) s += dim;
        off += s * stride;
        stride *= dim;
    }
    y[i] = x[off];
}
#endif

#ifdef SCATTER_UPDATE
// y already holds a copy of data, viewed [outer, A, inner]; updates [outer, n, inner]. One
// work-item per (outer, inner) column applies the n updates in order: the last duplicate wins.
// Negative indices are out of range (as OpenVINO): skipped and reported.
// P: columns inner A n axis
__kernel void scatter_update(__global const RAW_T* upd, __global const I_T* idx, __global RAW_T* y,
                             __global const int* P, __global int* err, const int check) {
    const int t = get_global_id(0);
    if (t >= P[0]) return;
    const int inner = P[1], A = P[2], n = P[3];
    const int o = t / inner, q = t % inner;
    for (int j = 0; j < n; ++j) {
        const long v = (long)idx[j];
        if (v < 0 || v >= A) {
            if (t == 0) report_index(err, check, v, A, P[4]);
            continue;
        }
        y[((long)o * A + v) * inner + q] = upd[((long)o * n + j) * inner + q];
    }
}
#endif
