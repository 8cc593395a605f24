// GRN again, with the 3-D DMA built-in: the preload kernel copies row y of every channel as C
// planes of one row each; the kernel itself writes its result back with a DMA transaction and
// waits for it (no postwrite companion).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void __dma_preload_grn3d(__global const half* restrict src, __global half* restrict dst,
                                  __local half* restrict local_src, __local half* restrict local_dst,
                                  int C, int H, float bias)
{
    const int W = get_local_size(0);
    WorkGroupDmaCreate3DTransaction(
        src + get_group_id(1) * W, local_src,
        W * sizeof(half), W * sizeof(half),      // line widths
        W * sizeof(half), W * sizeof(half),      // line strides (one line per plane)
        C,                                        // planes: the channels
        W * H * sizeof(half), W * sizeof(half),  // plane strides: a channel / packed
        W * sizeof(half),                         // bytes per plane
        0);
}

__kernel void grn3d(__global const half* restrict src, __global half* restrict dst,
                    __local half* restrict local_src, __local half* restrict local_dst,
                    int C, int H, float bias)
{
    const int x = get_local_id(0), W = get_local_size(0);
    float variance = bias + 1e-9f;
    for (int c = 0; c < C; c++) {
        const float v = local_src[c * W + x];
        variance += v * v;
    }
    const half scale = (half)native_rsqrt(variance);
    for (int c = 0; c < C; c++)
        local_dst[c * W + x] = local_src[c * W + x] * scale;
    event_t e = WorkGroupDmaCreate3DTransaction(
        local_dst, dst + get_group_id(1) * W,
        W * sizeof(half), W * sizeof(half), W * sizeof(half), W * sizeof(half),
        C, W * sizeof(half), W * H * sizeof(half), W * sizeof(half), 0);
    WaitWorkGroupDmaEvents(1, &e);
}
