// Reverse, Roll (library/roll_reverse.py).

#ifdef ROLL_REVERSE
// Roll and Reverse: y[c] = x[source of c], elements moved as raw bits. Per axis the source
// coordinate is dim-1-c (flip) or (c - shift) mod dim (shift already reduced to 0..dim-1).
// P: n rank dims[rank] shift[rank] flip[rank]
__kernel void roll_reverse(__global const RAW_T* x, __global RAW_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int rank = P[1];
    int r = i, off = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
        const int dim = P[2 + d];
        const int c = r % dim;
        r /= dim;
        int s = P[2 + 2 * rank + d] ? dim - 1 - c : c - P[2 + rank + d];
        if (s < 0) s += dim;
        off += s * stride;
        stride *= dim;
    }
    y[i] = x[off];
}
#endif
