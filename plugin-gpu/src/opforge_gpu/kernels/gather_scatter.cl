// Index-driven data movement: GatherElements, GatherND, ScatterElementsUpdate, ScatterNDUpdate.
// Elements move as raw bits (RAW_T) where no arithmetic is done; scatter reductions compute in
// X_CT through the operand macros. Indices out of range (after adding the axis length to negative
// ones) read 0 and are not written, and are reported (index_error.cl: the host raises).

#ifdef GATHER_ELEMENTS
// y has the shape of idx. P: n rank axis A dims[rank] data_strides[rank]
__kernel void gather_elements(__global const RAW_T* data, __global const I_T* idx, __global RAW_T* y,
                              __global const int* P, __global int* err, const int check) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1], axis = P[2], A = P[3];
    const long v = (long)idx[i];
    const long k = v < 0 ? v + A : v;
    if (k < 0 || k >= A) {
        y[i] = (RAW_T)0;
        report_index(err, check, v, A, axis);
        return;
    }
    int r = i, off = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const int dim = P[4 + d];
        const int c = r % dim;
        r /= dim;
        off += (d == axis ? (int)k : c) * P[4 + rank + d];
    }
    y[i] = data[off];
}
#endif

#ifdef GATHER_ND
// data viewed [nb, dims of the k indexed axes..., rest]; idx [nb, m, k]; y [nb, m, rest].
// P: n k m rest batch_stride dims[k] strides[k]
__kernel void gather_nd(__global const RAW_T* data, __global const I_T* idx, __global RAW_T* y,
                        __global const int* P, __global int* err, const int check) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int k = P[1], m = P[2], rest = P[3], bstride = P[4];
    const int t = i % rest;
    const int j = (i / rest) % m;
    const int b = i / (rest * m);
    int off = b * bstride + t;
    for (int q = 0; q < k; ++q) {
        const long v = (long)idx[(b * m + j) * k + q];
        const int dim = P[5 + q];
        const long c = v < 0 ? v + dim : v;
        if (c < 0 || c >= dim) {
            y[i] = (RAW_T)0;
            if (t == 0) report_index(err, check, v, dim, q);
            return;
        }
        off += (int)c * P[5 + k + q];
    }
    y[i] = data[off];
}
#endif

// Reductions of the scatters: acc = SCATTER_OP(acc, u). REDUCTION: 0 none (replace), 1 sum,
// 2 prod, 3 min, 4 max, 5 mean, 6 sub.
#if defined(SCATTER_ELEMENTS) || defined(SCATTER_ND)
#if REDUCTION == 0
#define SCATTER_OP(a, u) (u)
#elif REDUCTION == 1 || REDUCTION == 5
#define SCATTER_OP(a, u) ((a) + (u))
#elif REDUCTION == 2
#define SCATTER_OP(a, u) ((a) * (u))
#elif REDUCTION == 3
#define SCATTER_OP(a, u) ((u) < (a) ? (u) : (a))
#elif REDUCTION == 4
#define SCATTER_OP(a, u) ((u) > (a) ? (u) : (a))
#else
#define SCATTER_OP(a, u) ((a) - (u))
#endif
#endif

#ifdef SCATTER_ELEMENTS
// y already holds a copy of data. Updates only collide along the scatter axis, so one work-item
// owns a whole line of updates (every coordinate but the axis) and applies it in order: the
// result is deterministic (the last duplicate wins for "none", as the reference).
// P: nlines rank axis A J(=updates' axis length) use_init upd_dims[rank] y_strides[rank] u_strides[rank]
__kernel void scatter_elements(__global const X_T* upd, __global const I_T* idx, __global X_T* y,
                               __global const int* P, __global int* err, const int check) {
    const int line = get_global_id(0);
    if (line >= P[0]) return;
    const int rank = P[1], axis = P[2], A = P[3], J = P[4], use_init = P[5];
    __global const int* dims = P + 6;
    __global const int* ys = P + 6 + rank;
    __global const int* us = P + 6 + 2 * rank;
    int r = line, ybase = 0, ubase = 0;
    for (int d = rank - 1; d >= 0; --d) {
        if (d == axis) continue;
        const int c = r % dims[d];
        r /= dims[d];
        ybase += c * ys[d];
        ubase += c * us[d];
    }
    for (int j = 0; j < J; ++j) {  // an index out of range matches no target: report it
        const long v = (long)idx[ubase + j * us[axis]];
        if (v < -A || v >= A) report_index(err, check, v, A, axis);
    }
    for (int a = 0; a < A; ++a) {
        const int target = ybase + a * ys[axis];
#if REDUCTION == 0
        X_CT acc = (X_CT)LOAD_X(y, target);
#else
        X_CT acc = use_init ? (X_CT)LOAD_X(y, target) : (X_CT)(IDENTITY);
#endif
        int count = 0;
        for (int j = 0; j < J; ++j) {
            long k = (long)idx[ubase + j * us[axis]];
            if (k < 0) k += A;
            if (k != a) continue;
            const X_CT u = (X_CT)LOAD_X(upd, ubase + j * us[axis]);
            acc = SCATTER_OP(acc, u);
            ++count;
        }
        if (!count) continue;
#if REDUCTION == 5
        const int n = count + (use_init ? 1 : 0);
        acc = acc / (X_CT)n;
#endif
        STORE_X(y, target, acc);
    }
}
#endif

#ifdef SCATTER_ND
// y already holds a copy of data; y viewed [rows of the k indexed axes, rest]. One work-item per
// element of a slice applies every update to its column in order. P: rest m k dims[k] strides[k]
__kernel void scatter_nd(__global const X_T* upd, __global const I_T* idx, __global X_T* y,
                         __global const int* P, __global int* err, const int check) {
    const int t = get_global_id(0);
    const int rest = P[0], m = P[1], k = P[2];
    if (t >= rest) return;
    for (int j = 0; j < m; ++j) {
        int off = t;
        int ok = 1;
        for (int q = 0; q < k; ++q) {
            const long v = (long)idx[j * k + q];
            const int dim = P[3 + q];
            const long c = v < 0 ? v + dim : v;
            if (c < 0 || c >= dim) {
                ok = 0;
                if (t == 0) report_index(err, check, v, dim, q);
                break;
            }
            off += (int)c * P[3 + k + q];
        }
        if (!ok) continue;
        const X_CT u = (X_CT)LOAD_X(upd, j * rest + t);
        const X_CT a = (X_CT)LOAD_X(y, off);
        STORE_X(y, off, SCATTER_OP(a, u));
    }
}
#endif
