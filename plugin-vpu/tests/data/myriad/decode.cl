// A greedy CTC-style decoder: one work-item of one work group walks the sequence, takes the best
// class of each step, merges repeats, drops the blank class and pads the rest with -1.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void greedy_decode(__global const half* restrict probs, __global half* restrict out,
                            int T, int C, int blank)
{
    int n = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        int best = 0;
        half best_p = probs[t * C];
        for (int c = 1; c < C; c++) {
            if (probs[t * C + c] > best_p) { best_p = probs[t * C + c]; best = c; }
        }
        if (best != prev && best != blank)
            out[n++] = (half)best;
        prev = best;
    }
    for (; n < T; n++)
        out[n] = (half)(-1.0f);
}
