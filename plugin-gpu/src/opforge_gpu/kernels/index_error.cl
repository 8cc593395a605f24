// Reporting indices out of range (prepended to a kernel file compiled with INDEX_ERRORS). Kernels
// reading or writing through indices computed at run time never access memory out of bounds:
// they skip such an index and report it here. err is the request's error buffer, check the id of
// the launch (IndexCheck on the host). The first report wins: err[0] = check, err[1], err[2] the
// low and high words of the index, err[3] the size it had to fit, err[4] which dimension (or
// batch element) it indexes. The host reads the buffer once after the inference and raises.
void report_index(__global int* err, const int check, const long value, const int size, const int which) {
    if (atomic_cmpxchg((volatile __global int*)err, 0, check) == 0) {
        ((__global uint*)err)[1] = (uint)value;
        ((__global uint*)err)[2] = (uint)((ulong)value >> 32);
        err[3] = size;
        err[4] = which;
    }
}
