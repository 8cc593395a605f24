// Identity of the template extension: y = x * SCALE, written against OpenVINO's JIT definitions
// (INPUT0_TYPE, OUTPUT0_DIMS, *_PITCHES, *_OFFSET), so it runs on OpenVINO's GPU plugin too.
//
// Any rank: OUTPUT0_DIMS has OUTPUT0_DIMS_SIZE entries (4 for ranks 0-4, 5 or 6 beyond), and each
// work-item walks the flat element range with the stride of the whole launch, splitting each
// flat index into coordinates for the pitches. So a launch of any size (rounded up, or smaller
// than the tensor) neither writes past the output nor leaves elements out.
__kernel void template_identity(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    ulong total = 1;
    for (int d = 0; d < OUTPUT0_DIMS_SIZE; ++d) total *= (ulong)OUTPUT0_DIMS[d];
    const ulong step = get_global_size(0) * get_global_size(1) * get_global_size(2);
    const ulong first = get_global_id(0) + get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2));
    for (ulong i = first; i < total; i += step) {
        ulong rest = i, in_id = INPUT0_OFFSET, out_id = OUTPUT0_OFFSET;
        for (int d = OUTPUT0_DIMS_SIZE - 1; d >= 0; --d) {
            const ulong c = rest % (ulong)OUTPUT0_DIMS[d];
            rest /= (ulong)OUTPUT0_DIMS[d];
            in_id += c * (ulong)INPUT0_PITCHES[d];
            out_id += c * (ulong)OUTPUT0_PITCHES[d];
        }
        // scale == 1 must copy exactly, integers included (no round trip through float)
        output[out_id] = (SCALE == 1.0f) ? (OUTPUT0_TYPE)input[in_id] : (OUTPUT0_TYPE)(input[in_id] * SCALE);
    }
}
