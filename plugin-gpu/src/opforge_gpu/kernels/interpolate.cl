// Resampling along one axis of [outer, Lin, inner] -> [outer, Lout, inner] with T taps per output
// position: y = sum_t w[j][t] * x[idx[j][t]]. The tap tables come from the shapes and attributes
// only (Interpolate's nearest, linear, linear_onnx and cubic modes are all separable); taps with
// idx < 0 are skipped, so an infinite input never meets a zero weight.
#ifdef RESAMPLE
// P: n Lout inner Lin T
__kernel void resample_axis(__global const X_T* x, __global const int* idx, __global const float* wt,
                            __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int Lout = P[1], inner = P[2], Lin = P[3], T = P[4];
    const int t = i % inner;
    const int j = (i / inner) % Lout;
    const int o = i / (inner * Lout);
    const int base = o * Lin * inner + t;
    float acc = 0.0f;
    for (int k = 0; k < T; ++k) {
        const int s = idx[j * T + k];
        if (s < 0) continue;
        acc = mad(wt[j * T + k], (float)LOAD_X(x, base + s * inner), acc);
    }
    STORE_Y(y, i, acc);
}
#endif
