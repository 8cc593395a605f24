// BitCast: each element's bits copied into the output type of the same size (RAW_T: the common
// unsigned type of that size). A boolean output stores 0/1: any non-zero byte becomes 1.
__kernel void bit_cast(__global const RAW_T* x, __global RAW_T* y, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
#if TO_BOOL
    y[i] = (RAW_T)(x[i] != 0);
#else
    y[i] = x[i];
#endif
}
