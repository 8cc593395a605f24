// Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions (no groups, no dilation): 2.25 times fewer
// multiplications than the direct product. Three launches:
//   wino_input:  V[xi][C][P] = (B^T d B)[xi] for each 4x4 input tile d (P = N * TH * TW tiles of
//                2x2 outputs, xi the 16 positions of the transformed tile);
//   matmul (gemm.cl), 16 batches: M[xi] = U[xi] (Cout x C) * V[xi] (C x P), U = G g G^T packed on
//                the host (folded BatchNorm scale included);
//   wino_output: y = A^T M A per tile, then the epilogue (bias, residual, activation).
// V and M are float whatever the storage of x and y (half storage loads/stores through LOAD_X...).

#if ACT == 1
#define ACTIVATE(v) ((v) < 0.0f ? 0.0f : (v)) /* NaN stays NaN (fmax would drop it) */
#elif ACT == 2
#define ACTIVATE(v) (isnan(v) ? (v) : fmin(fmax((v), p0), p1))
#else
#define ACTIVATE(v) (v)
#endif

#ifdef WINO_INPUT
// One work-item per (n, c, tile). P: total(= N * C * TH * TW) C H W TH TW PH PW NP(= N * TH * TW)
__kernel void wino_input(__global const X_T* x, __global float* V, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], H = P[2], W = P[3], TH = P[4], TW = P[5], PH = P[6], PW = P[7];
    const int tw = i % TW;
    const int th = (i / TW) % TH;
    const int c = (i / (TW * TH)) % C;
    const int n = i / (TW * TH * C);
    const int h0 = 2 * th - PH, w0 = 2 * tw - PW;
    const int xb = (n * C + c) * H * W;
    float d[4][4];
    for (int r = 0; r < 4; ++r) {
        const int h = h0 + r;
        const int hok = h >= 0 && h < H;
        for (int q = 0; q < 4; ++q) {
            const int w = w0 + q;
            d[r][q] = (hok && w >= 0 && w < W) ? (float)LOAD_X(x, xb + h * W + w) : 0.0f;
        }
    }
    // t = B^T d (rows), then v = t B (columns); B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
    float t[4][4];
    for (int q = 0; q < 4; ++q) {
        t[0][q] = d[0][q] - d[2][q];
        t[1][q] = d[1][q] + d[2][q];
        t[2][q] = d[2][q] - d[1][q];
        t[3][q] = d[1][q] - d[3][q];
    }
    const int NP = P[8];
    const int p = (n * TH + th) * TW + tw;
    const int stride = C * NP;  // between consecutive xi
    __global float* v = V + c * NP + p;
    for (int r = 0; r < 4; ++r) {
        v[(r * 4 + 0) * stride] = t[r][0] - t[r][2];
        v[(r * 4 + 1) * stride] = t[r][1] + t[r][2];
        v[(r * 4 + 2) * stride] = t[r][2] - t[r][1];
        v[(r * 4 + 3) * stride] = t[r][1] - t[r][3];
    }
}
#endif

#ifdef WINO_OUTPUT
// One work-item per (n, co, tile). P: total(= N * Cout * TH * TW) Cout OH OW TH TW NP p0 p1
__kernel void wino_output(__global const float* M, __global const BI_T* bias, __global const R_T* res,
                          __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int Cout = P[1], OH = P[2], OW = P[3], TH = P[4], TW = P[5], NP = P[6];
    const float p0 = as_float(P[7]), p1 = as_float(P[8]);
    const int tw = i % TW;
    const int th = (i / TW) % TH;
    const int co = (i / (TW * TH)) % Cout;
    const int n = i / (TW * TH * Cout);
    const int p = (n * TH + th) * TW + tw;
    const int stride = Cout * NP;
    __global const float* m = M + co * NP + p;
    float t[2][4];  // A^T m: A^T = [1 1 1 0; 0 1 -1 -1]
    for (int q = 0; q < 4; ++q) {
        const float m0 = m[(0 * 4 + q) * stride], m1 = m[(1 * 4 + q) * stride];
        const float m2 = m[(2 * 4 + q) * stride], m3 = m[(3 * 4 + q) * stride];
        t[0][q] = m0 + m1 + m2;
        t[1][q] = m1 - m2 - m3;
    }
#if HAS_BIAS
    const float b = LOAD_BI(bias, co);
#else
    const float b = 0.0f;
#endif
    const int ybase = (n * Cout + co) * OH * OW;
    for (int r = 0; r < 2; ++r) {
        const int oh = 2 * th + r;
        if (oh >= OH) break;
        const float o[2] = {t[r][0] + t[r][1] + t[r][2] + b, t[r][1] - t[r][2] - t[r][3] + b};
        for (int q = 0; q < 2; ++q) {
            const int ow = 2 * tw + q;
            if (ow >= OW) break;
            const int idx = ybase + oh * OW + ow;
            float v = o[q];
#if HAS_RES
            v += LOAD_R(res, idx);
#endif
            STORE_Y(y, idx, ACTIVATE(v));
        }
    }
}
#endif
