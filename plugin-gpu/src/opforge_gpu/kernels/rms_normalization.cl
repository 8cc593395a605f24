// RMSNormalization: y = x / sqrt(mean(x^2) + eps) * scale over rows of L contiguous elements (the
// dims from `axis` on). One work-group of WG (a power of two) work-items per row: each sums the
// squares of a strided share of the row in the compute type (X_CT: float for f16/f32, double for
// f64), the group adds the shares in local memory, then each scales its share.
// P: L total scale_mode nd dims[nd] scale_strides[nd] eps(bits: 1 int for float, 2 for double)
// (EPS_DOUBLE: X_CT is double; the program enables cl_khr_fp64 for it)
// scale_mode: 0 = one value, 1 = one value per row element (scale covers the normalised dims),
// 2 = broadcast over some of them (the offset is rebuilt from dims and strides, 0 where broadcast)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rms_normalization(__global const X_T* x, __global const S_T* s, __global Y_T* y, __global const int* P) {
    const int L = P[0];
    const int mode = P[2], nd = P[3];
    __global const int* dims = P + 4;
    __global const int* sstr = P + 4 + nd;
#ifdef EPS_DOUBLE
    const X_CT eps = (X_CT)as_double((int2)(P[4 + 2 * nd], P[5 + 2 * nd]));
#else
    const X_CT eps = (X_CT)as_float(P[4 + 2 * nd]);
#endif
    const int lid = get_local_id(0);
    const int start = get_group_id(0) * L;
    __local X_CT red[WG];
    X_CT acc = 0;
    for (int k = lid; k < L; k += WG) {
        const X_CT v = LOAD_X(x, start + k);
        acc += v * v;
    }
    red[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h >>= 1) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const X_CT inv = (X_CT)1 / sqrt(red[0] / (X_CT)L + eps);
    for (int k = lid; k < L; k += WG) {
        int so = 0;
        if (mode == 1) {
            so = k;
        } else if (mode == 2) {
            int r = k;
            for (int d = nd - 1; d >= 0; --d) {
                so += (r % dims[d]) * sstr[d];
                r /= dims[d];
            }
        }
        STORE_Y(y, start + k, (X_CT)LOAD_X(x, start + k) * inv * (X_CT)LOAD_S(s, so));
    }
}
