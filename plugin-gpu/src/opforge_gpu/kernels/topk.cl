// TopK by ranking: the rank of an element is the number of elements of its row that come before
// it (better value, or equal value and lower index), which is also its position in the result
// sorted by value. Rows are [outer, L, inner]; one work-item per input element, O(L) each.
// BETTER(a, b): a comes before b (a > b for "max", a < b for "min"; NaN counts as the largest).

#ifdef TOPK
// P: n L inner k
__kernel void topk_rank(__global const X_T* x, __global Y_T* y, __global I_T* ind, __global int* ranks,
                        __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int L = P[1], inner = P[2], K = P[3];
    const int t = i % inner;
    const int l = (i / inner) % L;
    const int o = i / (inner * L);
    const int base = o * L * inner + t;
    const X_CT v = (X_CT)LOAD_X(x, i);
    int rank = 0;
    for (int j = 0; j < L; ++j) {
        const X_CT w = (X_CT)LOAD_X(x, base + j * inner);
        rank += BETTER(w, v) || ((w == v || (w != w && v != v)) && j < l);  // NaNs tie with each other
    }
#if SORT_INDEX
    ranks[i] = rank;
#else
    if (rank < K) {
        const int out = (o * K + rank) * inner + t;
        STORE_Y(y, out, v);
        ind[out] = (I_T)l;
    }
#endif
}

// sort="index": the selected elements (rank < k) keep their order along the row. P: n L inner k
__kernel void topk_index(__global const X_T* x, __global Y_T* y, __global I_T* ind,
                         __global const int* ranks, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int L = P[1], inner = P[2], K = P[3];
    if (ranks[i] >= K) return;
    const int t = i % inner;
    const int l = (i / inner) % L;
    const int o = i / (inner * L);
    const int base = o * L * inner + t;
    int pos = 0;
    for (int j = 0; j < l; ++j) pos += ranks[base + j * inner] < K;
    const int out = (o * K + pos) * inner + t;
    STORE_Y(y, out, LOAD_X(x, i));
    ind[out] = (I_T)l;
}
#endif
