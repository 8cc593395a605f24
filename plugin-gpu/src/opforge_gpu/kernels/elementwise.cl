// Element-wise kernels. The builder defines, per operand X (A, B, C, Y):
//   X_T storage type, X_CT compute type, LOAD_X(p, i), STORE_X(p, i, v)
// and the operation as an expression: UNARY_OP(a) / BINARY_OP(a, b) in compute type CT.
// P is the int parameter block: P[0] = element count, then per-kernel data; float parameters
// travel as int bits and are read with as_float.

#define PF(k) as_float(P[k])

#ifdef UNARY_OP
__kernel void unary(__global const A_T* a, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const float p0 = PF(1);
    const float p1 = PF(2);
    const CT x = (CT)LOAD_A(a, i);
    STORE_Y(y, i, UNARY_OP(x));
}
#endif

// Offsets of element i of the output in each broadcast input.
// P: [n, rank, dims[rank], strides_a[rank], strides_b[rank], strides_c[rank]]
#define BCAST_OFFSETS(i, NIN, off)                                   \
    {                                                                \
        const int rank = P[1];                                       \
        int r = (i);                                                 \
        for (int d = rank - 1; d >= 0; --d) {                        \
            const int dim = P[2 + d];                                \
            const int c = r % dim;                                   \
            r /= dim;                                                \
            for (int k = 0; k < NIN; ++k) off[k] += c * P[2 + (k + 1) * rank + d]; \
        }                                                            \
    }

#ifdef BINARY_OP
#if !defined(CT_IS_FLOAT)
// Integer power by squaring: exact, wrapping on overflow as the reference; negative exponents
// go through the real power and truncate.
CT ipow(CT a, CT b) {
    if (b < 0) return (CT)pow((float)a, (float)b);
    CT r = 1;
    while (b > 0) {
        if (b & 1) r *= a;
        a *= a;
        b >>= 1;
    }
    return r;
}
#endif
__kernel void binary(__global const A_T* a, __global const B_T* b, __global Y_T* y,
                     __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
#if defined(SAME_SHAPE)
    const int ia = i, ib = i;
#elif defined(B_SCALAR)
    const int ia = i, ib = 0;
#elif defined(A_SCALAR)
    const int ia = 0, ib = i;
#else
    int off[2] = {0, 0};
    BCAST_OFFSETS(i, 2, off);
    const int ia = off[0], ib = off[1];
#endif
    const CT x = (CT)LOAD_A(a, ia);
    const CT z = (CT)LOAD_B(b, ib);
    STORE_Y(y, i, BINARY_OP(x, z));
}
#endif

#ifdef SELECT
__kernel void select_op(__global const A_T* cond, __global const B_T* t, __global const C_T* e,
                        __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    int off[3] = {0, 0, 0};
    BCAST_OFFSETS(i, 3, off);
    const int c = LOAD_A(cond, off[0]) != 0;
    STORE_Y(y, i, c ? LOAD_B(t, off[1]) : LOAD_C(e, off[2]));
}
#endif

#ifdef PRELU
// slope broadcast along the channel axis (OpenVINO's PRelu rule) or numpy-style: the host
// passes the slope strides, so the kernel is a plain broadcast.
__kernel void prelu(__global const A_T* a, __global const B_T* b, __global Y_T* y,
                    __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    int off[2] = {0, 0};
    BCAST_OFFSETS(i, 2, off);
    const float x = LOAD_A(a, off[0]);
    const float s = LOAD_B(b, off[1]);
    STORE_Y(y, i, x < 0.0f ? x * s : x);
}
#endif
