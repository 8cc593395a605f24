// ROIAlign, GridSample: interpolated samples of an image (library/sampling.py).

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
