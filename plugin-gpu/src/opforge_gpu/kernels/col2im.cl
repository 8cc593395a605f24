// Col2Im (library/col2im.py).

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
