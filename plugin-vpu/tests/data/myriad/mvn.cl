// A two-stage mean-variance normalization written for MYRIAD (half data, offline-compiled):
// stage 0 sums each channel into an inter-stage buffer, stage 1 normalizes with those sums.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void mvn_sums(__global const half* restrict src, __global float* restrict sums, int W, int H)
{
    const int c = get_global_id(0);
    const __global half* plane = src + c * W * H;
    float s = 0.f, s2 = 0.f;
    for (int i = 0; i < W * H; i++) {
        const float v = plane[i];
        s += v;
        s2 += v * v;
    }
    sums[2 * c] = s;
    sums[2 * c + 1] = s2;
}

__kernel void mvn_apply(__global const half* restrict src,
                        __global const float* restrict sums,
                        __global const half* restrict gamma,
                        __global half* restrict dst,
                        int W, int H, float eps)
{
    const int x = get_global_id(0), y = get_global_id(1), c = get_global_id(2);
    const float n = (float)(W * H);
    const float mean = sums[2 * c] / n;
    const float var = sums[2 * c + 1] / n - mean * mean;
    const int i = (c * H + y) * W + x;
    const half scale = gamma[c];
    dst[i] = (half)(((float)src[i] - mean) * native_rsqrt(var + eps)) * scale;
}
