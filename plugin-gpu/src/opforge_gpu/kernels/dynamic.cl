// Data-dependent output sizes (library/dynamic.py): a count pass writes the size to a one-element
// buffer the host reads; the plan of the rest is built for it and a fill pass writes the output.

#ifdef NONZERO
// One work-group counts the non-zero elements. P: n rank dims[rank]
__kernel void nonzero_count(__global const X_T* x, __global int* cnt, __global const int* P) {
    __local int part[WG];
    const int l = get_local_id(0);
    int c = 0;
    for (int i = l; i < P[0]; i += WG) c += (LOAD_X(x, i) != 0);
    part[l] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) cnt[0] = part[0];
}

// One work-group walks the input in chunks of WG: a prefix sum of the flags gives each non-zero
// element its column (row-major order). y: [rank][count]. P: n rank dims[rank] count
__kernel void nonzero_fill(__global const X_T* x, __global Y_T* y, __global const int* P) {
    __local int scan[WG];
    const int l = get_local_id(0);
    const int n = P[0], rank = P[1], count = P[2 + rank];
    int base = 0;
    for (int start = 0; start < n; start += WG) {
        const int i = start + l;
        const int f = (i < n) ? (LOAD_X(x, i) != 0) : 0;
        scan[l] = f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = 1; s < WG; s <<= 1) {
            const int v = (l >= s) ? scan[l - s] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[l] += v;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (f) {
            const int col = base + scan[l] - 1;
            int r = i;
            for (int d = rank - 1; d >= 0; --d) {
                const int dim = P[2 + d];
                y[(long)d * count + col] = (Y_T)(r % dim);
                r /= dim;
            }
        }
        base += scan[WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
#endif

#ifdef UNIQUE
// Slices i < L of x viewed as [outer][L][inner] (the flattened input: outer = inner = 1).
// P: outer L inner
int slice_cmp(__global const X_T* x, int i, int j, __global const int* P) {
    const int outer = P[0], L = P[1], inner = P[2];
    for (int o = 0; o < outer; ++o)
        for (int k = 0; k < inner; ++k) {
            const X_CT a = LOAD_X(x, ((long)o * L + i) * inner + k);
            const X_CT b = LOAD_X(x, ((long)o * L + j) * inner + k);
            if (a < b) return -1;
            if (b < a) return 1;
        }
    return 0;
}

// first[i]: the first slice equal to slice i.
__kernel void unique_first(__global const X_T* x, __global int* first, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[1]) return;
    int j = 0;
    while (j < i && slice_cmp(x, i, j, P) != 0) ++j;
    first[i] = j;
}

// rank[i]: the position of slice i's group in the output (SORTED: distinct slices below it;
// else: groups first seen before it); cnt[i]: the size of its group.
__kernel void unique_rank(__global const X_T* x, __global const int* first, __global int* rank,
                          __global int* cnt, __global const int* P) {
    const int i = get_global_id(0);
    const int L = P[1];
    if (i >= L) return;
    const int f = first[i];
    int r = 0, c = 0;
    for (int j = 0; j < L; ++j) {
        const int fj = first[j];
        c += (fj == f);
        if (fj == j) {
#if SORTED
            r += (slice_cmp(x, j, f, P) < 0);
#else
            r += (j < f);
#endif
        }
    }
    rank[i] = r;
    cnt[i] = c;
}

// The number of groups (one work-group).
__kernel void unique_count(__global const int* first, __global int* out, __global const int* P) {
    __local int part[WG];
    const int l = get_local_id(0);
    int c = 0;
    for (int i = l; i < P[1]; i += WG) c += (first[i] == i);
    part[l] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[0] = part[0];
}

// P: outer L inner U
__kernel void unique_fill(__global const X_T* x, __global const int* first, __global const int* rank,
                          __global const int* cnt, __global Y_T* y, __global I_T* fidx, __global I_T* inv,
                          __global C_T* counts, __global const int* P) {
    const int i = get_global_id(0);
    const int outer = P[0], L = P[1], inner = P[2], U = P[3];
    if (i >= L) return;
    const int r = rank[i];
    inv[i] = (I_T)r;
    if (first[i] != i) return;
    fidx[r] = (I_T)i;
    counts[r] = (C_T)cnt[i];
    for (int o = 0; o < outer; ++o)
        for (int k = 0; k < inner; ++k)
            STORE_Y(y, ((long)o * U + r) * inner + k, LOAD_X(x, ((long)o * L + i) * inner + k));
}
#endif

#ifdef NMS
// Box i of batch b as (y_min, x_min, y_max, x_max).
void nms_box(__global const B_T* boxes, int b, int i, int N, float* o) {
    const long p = ((long)b * N + i) * 4;
    const float v0 = LOAD_B(boxes, p), v1 = LOAD_B(boxes, p + 1), v2 = LOAD_B(boxes, p + 2), v3 = LOAD_B(boxes, p + 3);
#if CENTER
    o[0] = v1 - v3 / 2; o[1] = v0 - v2 / 2; o[2] = v1 + v3 / 2; o[3] = v0 + v2 / 2;
#else
    o[0] = fmin(v0, v2); o[1] = fmin(v1, v3); o[2] = fmax(v0, v2); o[3] = fmax(v1, v3);
#endif
}

float nms_iou(const float* a, const float* b) {
    const float area = (a[2] - a[0]) * (a[3] - a[1]);
    const float areas = (b[2] - b[0]) * (b[3] - b[1]);
    const float ih = fmax(fmin(a[2], b[2]) - fmax(a[0], b[0]), 0.0f);
    const float iw = fmax(fmin(a[3], b[3]) - fmax(a[1], b[1]), 0.0f);
    const float inter = ih * iw;
    const float uni = area + areas - inter;
    return (area > 0 && areas > 0 && uni > 0) ? inter / uni : 0.0f;
}

// One work-item per (batch, class) runs the greedy selection; the boxes it keeps (in order) go to
// sel_box/sel_score[bc * N + k], their number to nsel[bc]. work/alive: scratch of B*C*N.
// P: B C N
__kernel void nms_select(__global const B_T* boxes, __global const S_T* scores, __global const M_T* maxo,
                         __global const T_T* iou_t, __global const T_T* score_t, __global const T_T* sigma_t,
                         __global float* work, __global int* alive, __global int* sel_box,
                         __global float* sel_score, __global int* nsel, __global const int* P) {
    const int bc = get_global_id(0);
    const int B = P[0], C = P[1], N = P[2];
    if (bc >= B * C) return;
    const int b = bc / C;
    long max_out = 0;
#if HAS_MAX
    max_out = (long)LOAD_M(maxo, 0);
#endif
    float thr = 0.0f, sthr = 0.0f, sigma = 0.0f;
#if HAS_IOU
    thr = LOAD_T(iou_t, 0);
#endif
#if HAS_SCORE
    sthr = LOAD_T(score_t, 0);
#endif
#if HAS_SIGMA
    sigma = LOAD_T(sigma_t, 0);
#endif
    __global float* sc = work + (long)bc * N;
    __global int* al = alive + (long)bc * N;
    for (int i = 0; i < N; ++i) {
        sc[i] = LOAD_S(scores, (long)bc * N + i);
        al[i] = sc[i] > sthr;
    }
    int picked = 0;
    while (picked < max_out) {
        int best = -1;
        for (int i = 0; i < N; ++i)
            if (al[i] && (best < 0 || sc[i] > sc[best])) best = i;
        if (best < 0) break;
        sel_box[(long)bc * N + picked] = best;
        sel_score[(long)bc * N + picked] = sc[best];
        ++picked;
        al[best] = 0;
        float a[4], o[4];
        nms_box(boxes, b, best, N, a);
        for (int i = 0; i < N; ++i) {
            if (!al[i]) continue;
            nms_box(boxes, b, i, N, o);
            const float iou = nms_iou(a, o);
            if (sigma > 0) {
                sc[i] *= exp(-(iou * iou) / (2 * sigma));
                al[i] = sc[i] > sthr;
            } else if (iou > thr) {
                al[i] = 0;
            }
        }
    }
    nsel[bc] = picked;
}

// The number of selections (one work-group). P: B C N
__kernel void nms_count(__global const int* nsel, __global int* out, __global const int* P) {
    __local int part[WG];
    const int l = get_local_id(0);
    int c = 0;
    for (int i = l; i < P[0] * P[1]; i += WG) c += nsel[i];
    part[l] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[0] = part[0];
}

// One work-item per (bc, k): its row in the output (by batch, class, selection order; with
// SORT_DESC stably by descending score). P: B C N count
__kernel void nms_fill(__global const int* sel_box, __global const float* sel_score, __global const int* nsel,
                       __global I_T* idx, __global Y_T* out_scores, __global I_T* valid, __global const int* P) {
    const int e = get_global_id(0);
    const int B = P[0], C = P[1], N = P[2];
    if (e == 0) valid[0] = (I_T)P[3];
    if (e >= B * C * N) return;
    const int bc = e / N, k = e % N;
    if (k >= nsel[bc]) return;
    const float s = sel_score[e];
    int pos = 0;
    for (int q = 0; q < B * C; ++q) {
        const int n = nsel[q];
#if SORT_DESC
        for (int j = 0; j < n; ++j) {
            const float t = sel_score[(long)q * N + j];
            pos += (t > s) || (t == s && (q < bc || (q == bc && j < k)));
        }
#else
        if (q < bc) pos += n;
#endif
    }
#if !SORT_DESC
    pos += k;
#endif
    idx[pos * 3] = (I_T)(bc / C);
    idx[pos * 3 + 1] = (I_T)(bc % C);
    idx[pos * 3 + 2] = (I_T)sel_box[e];
    STORE_Y(out_scores, pos * 3, (float)(bc / C));
    STORE_Y(out_scores, pos * 3 + 1, (float)(bc % C));
    STORE_Y(out_scores, pos * 3 + 2, s);
}
#endif
