// VPU (MYRIAD) kernel of the template extension's Identity: y = x * scale, in FP16 as the VPU
// runs it. Written for the MYRIAD OpenCL compiler (half arithmetic under cl_khr_fp16); opforge-vpu
// runs it unchanged on any OpenCL device. One work-item per element (identity.xml sizes the
// launch as B*F*Y*X, which counts every element at any rank).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void template_identity_vpu(__global const half* restrict x, __global half* restrict y, float scale)
{
    const int i = get_global_id(0);
    // scale == 1 copies exactly (no round trip through float)
    y[i] = (scale == 1.0f) ? x[i] : (half)((float)x[i] * scale);
}
