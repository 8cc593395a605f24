// Tensors generated from a few numbers: Range, OneHot, Eye-like fills. The numbers are read from
// device tensors (element 0), so values fed at run time never go through the host.

#ifdef RANGE
// y[i] = start + i * step, in the output's arithmetic (64-bit for integers). P: n
__kernel void range(__global const A_T* start, __global const B_T* step, __global Y_T* y,
                    __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
#if Y_INTEGRAL
    const long s = (long)LOAD_A(start, 0), d = (long)LOAD_B(step, 0);
    STORE_Y(y, i, s + (long)i * d);
#else
    const Y_CT s = (Y_CT)LOAD_A(start, 0), d = (Y_CT)LOAD_B(step, 0);
    STORE_Y(y, i, s + (Y_CT)i * d);
#endif
}
#endif

#ifdef ONE_HOT
// y [outer, depth, after] from idx [outer, after]. P: n depth after
__kernel void one_hot(__global const I_T* idx, __global const RAW_T* on, __global const RAW_T* off,
                      __global RAW_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int depth = P[1], after = P[2];
    const int t = i % after;
    const int d = (i / after) % depth;
    const int o = i / (after * depth);
    const long k = (long)idx[o * after + t];
    y[i] = (k == (long)d) ? on[0] : off[0];
}
#endif

#ifdef FILL_FROM
// y[i] = v[0]: a fill whose value is a device tensor (Pad's pad_value fed at run time). P: n
__kernel void fill_from(__global const RAW_T* v, __global RAW_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    y[i] = v[0];
}
#endif
