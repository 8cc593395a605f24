// RNNSequence, GRUSequence, LSTMSequence (library/recurrent.py).

#ifdef RNN_SEQ
// RNNSequence / GRUSequence / LSTMSequence (CELL 0, 1, 2): one work-group per (batch, direction)
// walks the whole sequence; the states live in local memory, each work-item computes the units
// j = lid, lid + WG, ... of a step, barriers separate the steps. Y beyond a sequence's length is
// zero; final states of an empty sequence are zero. ACT_F/ACT_G/ACT_H are the activations.
// P: T I D direction(0 forward, 1 reverse, 2 bidirectional) clip(bits) lbr
#define CLIPV(v) (clip > 0.0f ? clamp((v), -clip, clip) : (v))

float dotx(__global const X_T* w, const int row, const int n, __global const X_T* v) {
    float s = 0.0f;
    for (int k = 0; k < n; ++k) s += LOAD_X(w, row * n + k) * LOAD_X(v, k);
    return s;
}

float doth(__global const X_T* w, const int row, __local const float* v) {
    float s = 0.0f;
    for (int k = 0; k < HS; ++k) s += LOAD_X(w, row * HS + k) * v[k];
    return s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rnn_seq(__global const X_T* x, __global const X_T* h0, __global const X_T* c0, __global const L_T* lens,
             __global const X_T* W, __global const X_T* R, __global const X_T* Bv, __global Y_T* y,
             __global Y_T* ho, __global Y_T* co, __global const int* P) {
    const int T = P[0], I = P[1], D = P[2], dir = P[3];
    const float clip = as_float(P[4]);
    const int lbr = P[5];
    const int grp = get_group_id(0), lid = get_local_id(0);
    const int b = grp / D, d = grp % D;
    __local float h[HS], c[HS], nh[HS], nc[HS], aux[HS], zt[HS];
    const int sbase = (b * D + d) * HS;
    for (int j = lid; j < HS; j += WG) {
        h[j] = LOAD_X(h0, sbase + j);
#if CELL == 2
        c[j] = LOAD_X(c0, sbase + j);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const long lv = (long)lens[b];
    const int len = (int)(lv < 0 ? 0 : (lv > T ? T : lv));
    const int reverse = dir == 1 || d == 1;
    __global const X_T* Wd = W + (long)d * GATES * HS * I;
    __global const X_T* Rd = R + (long)d * GATES * HS * HS;
    __global const X_T* Bd = Bv + (long)d * NBIAS * HS;
    for (int t = len; t < T; ++t)
        for (int j = lid; j < HS; j += WG) STORE_Y(y, ((b * D + d) * T + t) * HS + j, 0.0f);
    for (int step = 0; step < len; ++step) {
        const int t = reverse ? len - 1 - step : step;
        __global const X_T* xp = x + ((long)b * T + t) * I;
#if CELL == 1
        if (!lbr) {
            for (int j = lid; j < HS; j += WG) {
                const float r = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
                zt[j] = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
                aux[j] = r * h[j];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#endif
        for (int j = lid; j < HS; j += WG) {
#if CELL == 0
            nh[j] = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
#elif CELL == 1
            float z, hh;
            if (lbr) {
                z = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
                const float r = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
                hh = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp)
                                 + r * (doth(Rd, 2 * HS + j, h) + LOAD_X(Bd, 3 * HS + j)) + LOAD_X(Bd, 2 * HS + j)));
            } else {
                z = zt[j];
                hh = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp) + doth(Rd, 2 * HS + j, aux) + LOAD_X(Bd, 2 * HS + j)));
            }
            nh[j] = (1.0f - z) * hh + z * h[j];
#else
            const float gf = ACT_F(CLIPV(dotx(Wd, j, I, xp) + doth(Rd, j, h) + LOAD_X(Bd, j)));
            const float gi = ACT_F(CLIPV(dotx(Wd, HS + j, I, xp) + doth(Rd, HS + j, h) + LOAD_X(Bd, HS + j)));
            const float gc = ACT_G(CLIPV(dotx(Wd, 2 * HS + j, I, xp) + doth(Rd, 2 * HS + j, h) + LOAD_X(Bd, 2 * HS + j)));
            const float go = ACT_F(CLIPV(dotx(Wd, 3 * HS + j, I, xp) + doth(Rd, 3 * HS + j, h) + LOAD_X(Bd, 3 * HS + j)));
            nc[j] = gf * c[j] + gi * gc;
            nh[j] = go * ACT_H(nc[j]);
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = lid; j < HS; j += WG) {
            h[j] = nh[j];
#if CELL == 2
            c[j] = nc[j];
#endif
            STORE_Y(y, ((b * D + d) * T + t) * HS + j, nh[j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = lid; j < HS; j += WG) {
        STORE_Y(ho, sbase + j, len > 0 ? h[j] : 0.0f);
#if CELL == 2
        STORE_Y(co, sbase + j, len > 0 ? c[j] : 0.0f);
#endif
    }
}
#endif
