// Eye (library/eye.py).

#ifdef EYE
// P: n rows cols diagonal
__kernel void eye(__global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int cols = P[2];
    const int c = i % cols, r = (i / cols) % P[1];
    STORE_Y(y, i, (c - r == P[3]) ? 1 : 0);
}
#endif
