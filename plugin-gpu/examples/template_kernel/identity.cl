// Identity of the template extension: y = x * SCALE, written against OpenVINO's JIT definitions
// (INPUT0_TYPE, OUTPUT0_DIMS, *_PITCHES, *_OFFSET), so it runs on OpenVINO's GPU plugin too.
__kernel void template_identity(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const uint xy = get_global_id(0);
    const uint f = get_global_id(1);
    const uint b = get_global_id(2);
    const uint x = xy % OUTPUT0_DIMS[3];
    const uint y = xy / OUTPUT0_DIMS[3];
    const uint in_id = b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2]
                     + x * INPUT0_PITCHES[3] + INPUT0_OFFSET;
    const uint out_id = b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2]
                      + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET;
    // scale == 1 must copy exactly, integers included (no round trip through float)
    output[out_id] = (SCALE == 1.0f) ? (OUTPUT0_TYPE)input[in_id] : (OUTPUT0_TYPE)(input[in_id] * SCALE);
}
