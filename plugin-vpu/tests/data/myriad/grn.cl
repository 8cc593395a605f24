// Global response normalization across channels with manual DMA, as in OpenVINO's VPU guide:
// the preload kernel copies one row of every channel into local memory, the kernel normalizes
// each pixel there, the postwrite kernel copies the row back. All three take the same arguments.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void __dma_preload_grn_NCHW(__global const half* restrict src, __global half* restrict dst,
                                     __local half* restrict local_src, __local half* restrict local_dst,
                                     int C, int H, float bias)
{
    WorkGroupDmaCreateStrideTransaction(
        src + get_group_id(1) * get_local_size(0),   // row y of channel 0
        local_src,
        get_local_size(0) * sizeof(half),            // src width: one row
        get_local_size(0) * sizeof(half),            // dst width
        get_local_size(0) * H * sizeof(half),        // src stride: one channel plane
        get_local_size(0) * sizeof(half),            // dst stride: packed
        get_local_size(0) * C * sizeof(half),        // size: a row of every channel
        0);
}

__kernel void __dma_postwrite_grn_NCHW(__global const half* restrict src, __global half* restrict dst,
                                       __local half* restrict local_src, __local half* restrict local_dst,
                                       int C, int H, float bias)
{
    WorkGroupDmaCreateStrideTransaction(
        local_dst,
        dst + get_group_id(1) * get_local_size(0),
        get_local_size(0) * sizeof(half),
        get_local_size(0) * sizeof(half),
        get_local_size(0) * sizeof(half),
        get_local_size(0) * H * sizeof(half),
        get_local_size(0) * C * sizeof(half),
        0);
}

__kernel void grn_NCHW(__global const half* restrict src, __global half* restrict dst,
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
}
