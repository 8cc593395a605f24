// Two implementations of one layer, chosen by its kernel size (Where): a 3x3 box mean on BFYX
// data, and a 1x1 "box" that only scales each channel, written for BYXF (channels innermost).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void box3(__global const half* restrict src, __global half* restrict dst, int W, int H, int k)
{
    const int x = get_global_id(0), y = get_global_id(1), c = get_global_id(2);
    const int r = k / 2;
    float s = 0.f;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            const int yy = y + dy, xx = x + dx;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                s += src[(c * H + yy) * W + xx];
        }
    dst[(c * H + y) * W + x] = (half)(s / (float)(k * k));
}

__kernel void box1_byxf(__global const half* restrict src, __global half* restrict dst, int F)
{
    const int f = get_global_id(0), yx = get_global_id(1);
    dst[yx * F + f] = src[yx * F + f] * (half)(f + 1);
}
