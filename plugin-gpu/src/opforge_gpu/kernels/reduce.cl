// Reductions, softmax and MVN.

#ifdef REDUCE
// One work-item per output. The output is viewed at the input's rank with reduced axes of size
// 1. P: total rank out_dims[rank] in_strides[rank] nred red_dims[nred] red_strides[nred]
__kernel void reduce(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    int r = i, base = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const int c = r % P[2 + d];
        r /= P[2 + d];
        base += c * P[2 + rank + d];
    }
    const int q = 2 + 2 * rank;
    const int nred = P[q];
    int count = 1;
    for (int d = 0; d < nred; ++d) count *= P[q + 1 + d];
    ACC_T acc = REDUCE_INIT;
    for (int j = 0; j < count; ++j) {
        int rr = j, off = base;
        for (int d = nred - 1; d >= 0; --d) {
            const int c = rr % P[q + 1 + d];
            rr /= P[q + 1 + d];
            off += c * P[q + 1 + nred + d];
        }
        const ACC_T v = (ACC_T)LOAD_X(x, off);
        acc = REDUCE_STEP(acc, v);
    }
    STORE_Y(y, i, REDUCE_FINAL(acc, count));
}
#endif

// Row kernels: one work-group per row of L elements spaced `inner` apart
// (row r = (o, t) starts at o * L * inner + t). WG is a power of two.
#define ROW_SETUP()                                   \
    const int L = P[0], inner = P[1];                 \
    const int row = get_group_id(0);                  \
    const int lid = get_local_id(0);                  \
    const int o = row / inner, t = row - (row / inner) * inner; \
    const int start = o * L * inner + t;              \
    __local float red[WG];

#define GROUP_REDUCE(val, OP)                                         \
    red[lid] = (val);                                                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    for (int s = WG / 2; s > 0; s >>= 1) {                            \
        if (lid < s) red[lid] = OP(red[lid], red[lid + s]);           \
        barrier(CLK_LOCAL_MEM_FENCE);                                 \
    }                                                                 \
    val = red[0];                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);

#define ADD(a, b) ((a) + (b))

#ifdef SOFTMAX
// P: L inner. LOG_SOFTMAX selects log(softmax).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax(__global const X_T* x, __global Y_T* y, __global const int* P) {
    ROW_SETUP();
    float m = -INFINITY;
    for (int k = lid; k < L; k += WG) m = fmax(m, (float)LOAD_X(x, start + k * inner));
    GROUP_REDUCE(m, fmax);
    float s = 0.0f;
    for (int k = lid; k < L; k += WG) s += exp((float)LOAD_X(x, start + k * inner) - m);
    GROUP_REDUCE(s, ADD);
#ifdef LOG_SOFTMAX
    const float ls = log(s);
    for (int k = lid; k < L; k += WG) STORE_Y(y, start + k * inner, (float)LOAD_X(x, start + k * inner) - m - ls);
#else
    const float inv = 1.0f / s;
    for (int k = lid; k < L; k += WG) STORE_Y(y, start + k * inner, exp((float)LOAD_X(x, start + k * inner) - m) * inv);
#endif
}
#endif

#ifdef MVN
// P: L inner normalize_variance eps_inside(1)/outside(0) eps(bits)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mvn(__global const X_T* x, __global Y_T* y, __global const int* P) {
    ROW_SETUP();
    const int norm_var = P[2], inside = P[3];
    const float eps = as_float(P[4]);
    float s = 0.0f;
    for (int k = lid; k < L; k += WG) s += LOAD_X(x, start + k * inner);
    GROUP_REDUCE(s, ADD);
    const float mean = s / (float)L;
    float inv = 1.0f;
    if (norm_var) {
        float v = 0.0f;
        for (int k = lid; k < L; k += WG) {
            const float d = (float)LOAD_X(x, start + k * inner) - mean;
            v += d * d;
        }
        GROUP_REDUCE(v, ADD);
        v /= (float)L;
        inv = inside ? 1.0f / sqrt(v + eps) : 1.0f / (sqrt(v) + eps);
    }
    for (int k = lid; k < L; k += WG)
        STORE_Y(y, start + k * inner, ((float)LOAD_X(x, start + k * inner) - mean) * inv);
}
#endif

#ifdef LRN
// Local response normalisation: y = x / (bias + alpha / size^naxes * box_sum(x^2))^beta, the box
// spanning [c - half, c + half] (clipped) along each normalised axis.
// P: n rank dims[rank] naxes axes[naxes] half size alpha beta bias (float bits)
__kernel void lrn(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    __global const int* dims = P + 2;
    const int naxes = P[2 + rank];
    __global const int* axes = P + 3 + rank;
    const int hw = P[3 + rank + naxes], size = P[4 + rank + naxes];
    const float alpha = as_float(P[5 + rank + naxes]), beta = as_float(P[6 + rank + naxes]);
    const float bias = as_float(P[7 + rank + naxes]);
    int lo[8], cnt[8], st[8];
    int total = 1;
    for (int a = 0; a < naxes; ++a) {
        const int d = axes[a];
        int stride = 1;
        for (int e = d + 1; e < rank; ++e) stride *= dims[e];
        const int c = (i / stride) % dims[d];
        const int l = max(c - hw, 0), h = min(c + hw, dims[d] - 1);
        lo[a] = l - c;
        cnt[a] = h - l + 1;
        st[a] = stride;
        total *= cnt[a];
    }
    float sum = 0.0f;
    for (int j = 0; j < total; ++j) {
        int r = j, off = i;
        for (int a = naxes - 1; a >= 0; --a) {
            off += (lo[a] + r % cnt[a]) * st[a];
            r /= cnt[a];
        }
        const float v = LOAD_X(x, off);
        sum += v * v;
    }
    const float scale = alpha / pown((float)size, naxes);
    STORE_Y(y, i, (float)LOAD_X(x, i) / pow(bias + scale * sum, beta));
}
#endif
