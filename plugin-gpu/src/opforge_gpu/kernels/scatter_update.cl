// ScatterUpdate (library/scatter_update.py).

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
