// Scans along one axis of [outer, L, inner]: one work-item per (outer, inner) line.

#ifdef CUMSUM
// P: lines L inner exclusive reverse
__kernel void cumsum(__global const X_T* x, __global Y_T* y, __global const int* P) {
    const int line = get_global_id(0);
    if (line >= P[0]) return;
    const int L = P[1], inner = P[2], exclusive = P[3], reverse = P[4];
    const int t = line % inner, o = line / inner;
    const int base = o * L * inner + t;
    ACC_T acc = (ACC_T)0;
    for (int s = 0; s < L; ++s) {
        const int l = reverse ? L - 1 - s : s;
        const int off = base + l * inner;
        const ACC_T v = (ACC_T)LOAD_X(x, off);
        if (exclusive) {
            STORE_Y(y, off, acc);
            acc += v;
        } else {
            acc += v;
            STORE_Y(y, off, acc);
        }
    }
}
#endif
