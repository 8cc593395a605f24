// Data movement: every layout change (Transpose, Slice, StridedSlice, Concat, Split, Broadcast,
// Tile, custom-kernel format reorders) is one strided copy; Gather has its own kernel. Elements
// move as raw bits (RAW_T), so half storage copies without conversion.

#ifdef STRIDED_COPY
// P: n rank src_off dst_off dims[rank] src_strides[rank] dst_strides[rank]
__kernel void strided_copy(__global const RAW_T* src, __global RAW_T* dst, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    int r = i, s = P[2], d = P[3];
    for (int k = rank - 1; k >= 0; --k) {
        const int dim = P[4 + k];
        const int c = r % dim;
        r /= dim;
        s += c * P[4 + rank + k];
        d += c * P[4 + 2 * rank + k];
    }
    dst[d] = src[s];
}
#endif

#ifdef GATHER
// data [bsz, outer, A, inner], indices [bsz, I]; y [bsz, outer, I, inner]. An index out of range
// gives 0 (as OpenVINO's Gather-8) and is reported (index_error.cl). P: n outer A inner I
__kernel void gather(__global const RAW_T* data, __global const I_T* idx, __global RAW_T* y,
                     __global const int* P, __global int* err, const int check) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int outer = P[1], A = P[2], inner = P[3], I = P[4];
    const int t = i % inner;
    const int j = (i / inner) % I;
    const int o = (i / (inner * I)) % outer;
    const int b = i / (inner * I * outer);
    const long v = (long)idx[b * I + j];
    const long k = v < 0 ? v + A : v;
    if (k < 0 || k >= A) {
        y[i] = (RAW_T)0;
        if (t == 0 && o == 0) report_index(err, check, v, A, 0);
        return;
    }
    y[i] = data[((b * outer + o) * A + (int)k) * inner + t];
}
#endif

#ifdef FILL
// P: n (unused) value bits from P[2], 8-byte aligned for 64-bit types
__kernel void fill(__global RAW_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    y[i] = *((__global const RAW_T*)(P + 2));
}
#endif

#ifdef AXIS_GATHER
// y[c] = x[sum_d tab_d[c_d] * xs_d], the tables of all axes concatenated (tab_d has y dims[d]
// entries). P: n rank dims[rank] x_strides[rank]
__kernel void axis_gather(__global const RAW_T* x, __global const int* tab, __global RAW_T* y,
                          __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    int start = 0;
    for (int d = 0; d < rank - 1; ++d) start += P[2 + d];
    int r = i, s = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const int dim = P[2 + d];
        const int c = r % dim;
        r /= dim;
        s += tab[start + c] * P[2 + rank + d];
        if (d > 0) start -= P[2 + d - 1];
    }
    y[i] = x[s];
}
#endif

#ifdef REVERSE_SEQUENCE
// The first len[b] elements of each sequence reversed, the rest copied; lengths are read on the
// device. A length outside 0..dim is clamped and reported (index_error.cl).
// P: n rank batch_axis seq_axis dims[rank] (contiguous tensors)
__kernel void reverse_sequence(__global const RAW_T* x, __global const I_T* len, __global RAW_T* y,
                               __global const int* P, __global int* err, const int check) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1], ba = P[2], sa = P[3];
    int r = i, stride = 1, bc = 0, sc = 0, sstride = 1;
    for (int d = rank - 1; d >= 0; --d) {
        const int dim = P[4 + d];
        const int c = r % dim;
        r /= dim;
        if (d == ba) bc = c;
        if (d == sa) { sc = c; sstride = stride; }
        stride *= dim;
    }
    const long v = (long)len[bc];
    const int S = P[4 + sa];
    long L = v;
    if (v < 0 || v > S) {
        L = v < 0 ? 0 : S;
        if (sc == 0) report_index(err, check, v, S, bc);
    }
    const int src = (sc < L) ? i + ((int)L - 1 - 2 * sc) * sstride : i;
    y[i] = x[src];
}
#endif
