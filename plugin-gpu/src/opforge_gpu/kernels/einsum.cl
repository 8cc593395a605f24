// Einsum (library/einsum.py).

#ifdef EINSUM
// One work-item per output element: the sum over every combination of the summed labels of the
// product of the operands. Each operand is read through one stride per label (0: broadcast; a
// label repeated within an operand adds its strides: the diagonal).
// P: n nout out_dims[nout] nsum sum_dims[nsum] then per operand: strides[nout + nsum]
__kernel void einsum(__global const X_T* a0, __global const X_T* a1, __global const X_T* a2,
                     __global const X_T* a3, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int nout = P[1];
    __global const int* od = P + 2;
    const int nsum = P[2 + nout];
    __global const int* sd = P + 3 + nout;
    __global const int* st = P + 3 + nout + nsum;
    const int nl = nout + nsum;
    int base[NOPS];
    for (int k = 0; k < NOPS; ++k) base[k] = 0;
    int r = i;
    for (int d = nout - 1; d >= 0; --d) {
        const int c = r % od[d];
        r /= od[d];
        for (int k = 0; k < NOPS; ++k) base[k] += c * st[k * nl + d];
    }
    int count = 1;
    for (int d = 0; d < nsum; ++d) count *= sd[d];
    ACC_T acc = (ACC_T)0;
    for (int j = 0; j < count; ++j) {
        int off[NOPS];
        for (int k = 0; k < NOPS; ++k) off[k] = base[k];
        int rr = j;
        for (int d = nsum - 1; d >= 0; --d) {
            const int c = rr % sd[d];
            rr /= sd[d];
            for (int k = 0; k < NOPS; ++k) off[k] += c * st[k * nl + nout + d];
        }
        ACC_T p = (ACC_T)LOAD_X(a0, off[0]);
#if NOPS > 1
        p *= (ACC_T)LOAD_X(a1, off[1]);
#endif
#if NOPS > 2
        p *= (ACC_T)LOAD_X(a2, off[2]);
#endif
#if NOPS > 3
        p *= (ACC_T)LOAD_X(a3, off[3]);
#endif
        acc += p;
    }
    STORE_Y(y, i, acc);
}
#endif
