// Tiled GEMM kernels: convolution as an implicit GEMM (im2col computed on the fly while
// loading tiles, never materialised) and batched MatMul. Each work-group computes a TM x TN
// tile of the output through TK-deep slices staged in local memory; each work-item keeps a
// WPTM x WPTN block of accumulators in registers. Local size is (TN / WPTN, TM / WPTM).
//
// Defines from the builder: TM TN TK WPTM WPTN, operand macros (X_T, LOAD_X...), the epilogue
// (HAS_BIAS, HAS_RES, ACT: 0 none, 1 relu, 2 clamp(p0, p1)) and, for convolution, the window
// geometry KH KW SH SW PH PW DH DW as compile-time constants so index math folds.

// On CPU devices (PoCL) the window geometry is read at run time from G (set by each kernel), so
// one program serves every convolution: there, building programs costs more than index math.
#ifdef GEO_RUNTIME
#define KH (G[0])
#define KW (G[1])
#define SH (G[2])
#define SW (G[3])
#define PH (G[4])
#define PW (G[5])
#define DH (G[6])
#define DW (G[7])
#endif

#define RTS_M (TM / WPTM)
#define RTS_N (TN / WPTN)
#define NTHREADS (RTS_M * RTS_N)
#define A_LOADS ((TM * TK) / NTHREADS)
#define B_LOADS ((TN * TK) / NTHREADS)

#if ACT == 1
#define ACTIVATE(v) ((v) < 0.0f ? 0.0f : (v)) /* NaN stays NaN (fmax would drop it) */
#elif ACT == 2
#define ACTIVATE(v) (isnan(v) ? (v) : fmin(fmax((v), p0), p1))
#else
#define ACTIVATE(v) (v)
#endif

// The inner product of the staged tiles, shared by both kernels. ROW(i) / COL(j): the tile row
// and column of accumulator acc[i][j].
#if VEC4
// Each work-item owns WPTM / 4 runs of 4 consecutive rows (and WPTN / 4 runs of 4 columns), the
// runs TM / (WPTM / 4) apart: local memory is read as float4 (a quarter of the load instructions
// of scalar reads, without bank conflicts: consecutive work-items read consecutive float4s).
#define VM (WPTM / 4)
#define VN (WPTN / 4)
#define ROW(i) (((i) / 4) * (TM / VM) + ty * 4 + ((i) & 3))
#define COL(j) (((j) / 4) * (TN / VN) + tx * 4 + ((j) & 3))
#define TILE_PRODUCT()                                                                     \
    for (int kk = 0; kk < TK; ++kk) {                                                      \
        float av[WPTM], bv[WPTN];                                                          \
        for (int v = 0; v < VM; ++v) {                                                     \
            const float4 t = *((__local const float4*)&As[kk][v * (TM / VM) + ty * 4]);    \
            av[4 * v] = t.s0; av[4 * v + 1] = t.s1; av[4 * v + 2] = t.s2; av[4 * v + 3] = t.s3; \
        }                                                                                  \
        for (int v = 0; v < VN; ++v) {                                                     \
            const float4 t = *((__local const float4*)&Bs[kk][v * (TN / VN) + tx * 4]);    \
            bv[4 * v] = t.s0; bv[4 * v + 1] = t.s1; bv[4 * v + 2] = t.s2; bv[4 * v + 3] = t.s3; \
        }                                                                                  \
        for (int i = 0; i < WPTM; ++i)                                                     \
            for (int j = 0; j < WPTN; ++j) acc[i][j] = mad(av[i], bv[j], acc[i][j]);       \
    }
#else
#define ROW(i) (ty + (i) * RTS_M)
#define COL(j) (tx + (j) * RTS_N)
#define TILE_PRODUCT()                                                   \
    for (int kk = 0; kk < TK; ++kk) {                                    \
        float av[WPTM], bv[WPTN];                                        \
        for (int i = 0; i < WPTM; ++i) av[i] = As[kk][ROW(i)];           \
        for (int j = 0; j < WPTN; ++j) bv[j] = Bs[kk][COL(j)];           \
        for (int i = 0; i < WPTM; ++i)                                   \
            for (int j = 0; j < WPTN; ++j) acc[i][j] = mad(av[i], bv[j], acc[i][j]); \
    }
#endif

#ifdef CONV
// x: [N, C, H, W]; w: packed [G][K = CinG*KH*KW][CoutG]; y: [N, Cout, OH, OW]
// P: C H W OH OW CoutG CinG K NT(=N*OH*OW) Cout p0 p1
// With SPLIT_K, work-group z = g * SPLIT_K + slice sums K in [slice * SPLIT_KC, + SPLIT_KC) and
// y is the float partial buffer [SPLIT_K][Cout][NT] (the epilogue is splitk_reduce's).
__kernel __attribute__((reqd_work_group_size(RTS_N, RTS_M, 1)))
void conv_gemm(__global const X_T* x, __global const W_T* w, __global const BI_T* bias,
               __global const R_T* res, __global Y_T* y, __global const int* P) {
    const int C = P[0], H = P[1], W = P[2], OH = P[3], OW = P[4];
    const int CoutG = P[5], CinG = P[6], K = P[7], NT = P[8], Cout = P[9];
    const float p0 = as_float(P[10]), p1 = as_float(P[11]);
    __global const int* G = P + 12;
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * RTS_N + tx;
    const int n0 = get_group_id(0) * TN;
    const int m0 = get_group_id(1) * TM;
#ifdef SPLIT_K
    const int g = get_group_id(2) / SPLIT_K;
    const int ks = get_group_id(2) - g * SPLIT_K;
    const int kbeg = ks * SPLIT_KC;
    const int kend = min(K, kbeg + SPLIT_KC);
#else
    const int g = get_group_id(2);
    const int kbeg = 0, kend = K;
#endif
    __local float As[TK][TM] __attribute__((aligned(16)));
    __local float Bs[TK][TN] __attribute__((aligned(16)));
    float acc[WPTM][WPTN];
    for (int i = 0; i < WPTM; ++i)
        for (int j = 0; j < WPTN; ++j) acc[i][j] = 0.0f;

    // The output pixel this work-item loads input for is fixed across the K loop.
    const int bn = tid % TN;
    const int bk0 = tid / TN;
    const int n = n0 + bn;
    const int nvalid = n < NT;
    const int OHW = OH * OW;
    const int ob = nvalid ? n / OHW : 0;
    const int sp = nvalid ? n - ob * OHW : 0;
    const int oh = sp / OW, ow = sp - (sp / OW) * OW;
    const int ih0 = oh * SH - PH, iw0 = ow * SW - PW;
    const int xbase = (ob * C + g * CinG) * H * W;
    const int am = tid % TM;
    const int ak0 = tid / TM;
    const __global W_T* wg = w + g * K * CoutG;

    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        for (int i = 0; i < A_LOADS; ++i) {
            const int kk = ak0 + i * (NTHREADS / TM);
            const int k = k0 + kk, m = m0 + am;
            As[kk][am] = (k < kend && m < CoutG) ? (float)LOAD_W(wg, k * CoutG + m) : 0.0f;
        }
        for (int i = 0; i < B_LOADS; ++i) {
            const int kk = bk0 + i * (NTHREADS / TN);
            const int k = k0 + kk;
            float v = 0.0f;
            if (nvalid && k < kend) {
                const int ci = k / (KH * KW);
                const int r = k - ci * (KH * KW);
                const int kh = r / KW, kw = r - (r / KW) * KW;
                const int ih = ih0 + kh * DH, iw = iw0 + kw * DW;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LOAD_X(x, xbase + (ci * H + ih) * W + iw);
            }
            Bs[kk][bn] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        TILE_PRODUCT();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = 0; j < WPTN; ++j) {
        const int nn = n0 + COL(j);
        if (nn >= NT) continue;
        const int b = nn / OHW;
        const int s = nn - b * OHW;
        for (int i = 0; i < WPTM; ++i) {
            const int m = m0 + ROW(i);
            if (m >= CoutG) continue;
            const int co = g * CoutG + m;
#ifdef SPLIT_K
            STORE_Y(y, (ks * Cout + co) * NT + nn, acc[i][j]);
#else
            const int idx = (b * Cout + co) * OHW + s;
            float v = acc[i][j];
#if HAS_BIAS
            v += LOAD_BI(bias, co);
#endif
#if HAS_RES
            v += LOAD_R(res, idx);
#endif
            STORE_Y(y, idx, ACTIVATE(v));
#endif
        }
    }
}
#endif

#ifdef SPLITK_REDUCE
// y = epilogue(sum of the SPLIT_K partial sums of conv_gemm). One work-item per output.
// part: [SPLIT_K][Cout][NT]. P: total(= N * Cout * OHW) Cout OHW p0 p1
__kernel void splitk_reduce(__global const float* part, __global const BI_T* bias, __global const R_T* res,
                            __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int Cout = P[1], OHW = P[2];
    const float p0 = as_float(P[3]), p1 = as_float(P[4]);
    const int NT = P[0] / Cout;
    const int s = i % OHW;
    const int co = (i / OHW) % Cout;
    const int b = i / (OHW * Cout);
    const int base = co * NT + b * OHW + s;
    float v = 0.0f;
    for (int k = 0; k < SPLIT_K; ++k) v += part[base + k * Cout * NT];
#if HAS_BIAS
    v += LOAD_BI(bias, co);
#endif
#if HAS_RES
    v += LOAD_R(res, i);
#endif
    STORE_Y(y, i, ACTIVATE(v));
}
#endif

#ifdef MATMUL
// y[b] = A[b] (M x K) * B[b] (K x N), A and B addressed through strides, so transposes and
// broadcast batches cost nothing. P: M N K a_sm a_sk b_sk b_sn p0 p1 then (a_off, b_off) per batch.
// A_KMAJOR / B_NMAJOR choose which index consecutive work-items load, for coalescing.
__kernel __attribute__((reqd_work_group_size(RTS_N, RTS_M, 1)))
void matmul(__global const X_T* a, __global const W_T* bm, __global const BI_T* bias,
            __global const R_T* res, __global Y_T* y, __global const int* P) {
    const int M = P[0], N = P[1], K = P[2];
    const int a_sm = P[3], a_sk = P[4], b_sk = P[5], b_sn = P[6];
    const float p0 = as_float(P[7]), p1 = as_float(P[8]);
    const int batch = get_group_id(2);
    const int a_off = P[9 + 2 * batch], b_off = P[10 + 2 * batch];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * RTS_N + tx;
    const int n0 = get_group_id(0) * TN;
    const int m0 = get_group_id(1) * TM;
    __local float As[TK][TM] __attribute__((aligned(16)));
    __local float Bs[TK][TN] __attribute__((aligned(16)));
    float acc[WPTM][WPTN];
    for (int i = 0; i < WPTM; ++i)
        for (int j = 0; j < WPTN; ++j) acc[i][j] = 0.0f;
#if A_KMAJOR
    const int am = tid / TK, ak = tid % TK;
#define A_STEP_M (NTHREADS / TK)
#else
    const int am = tid % TM, ak = tid / TM;
#define A_STEP_K (NTHREADS / TM)
#endif
#if B_NMAJOR
    const int bn = tid % TN, bk = tid / TN;
#define B_STEP_K (NTHREADS / TN)
#else
    const int bn = tid / TK, bk = tid % TK;
#define B_STEP_N (NTHREADS / TK)
#endif
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int i = 0; i < A_LOADS; ++i) {
#if A_KMAJOR
            const int mm = am + i * A_STEP_M, kk = ak;
#else
            const int mm = am, kk = ak + i * A_STEP_K;
#endif
            const int m = m0 + mm, k = k0 + kk;
            As[kk][mm] = (m < M && k < K) ? (float)LOAD_X(a, a_off + m * a_sm + k * a_sk) : 0.0f;
        }
        for (int i = 0; i < B_LOADS; ++i) {
#if B_NMAJOR
            const int nn = bn, kk = bk + i * B_STEP_K;
#else
            const int nn = bn + i * B_STEP_N, kk = bk;
#endif
            const int n = n0 + nn, k = k0 + kk;
            Bs[kk][nn] = (n < N && k < K) ? (float)LOAD_W(bm, b_off + k * b_sk + n * b_sn) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        TILE_PRODUCT();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int ybase = batch * M * N;
    for (int i = 0; i < WPTM; ++i) {
        const int m = m0 + ROW(i);
        if (m >= M) continue;
        for (int j = 0; j < WPTN; ++j) {
            const int n = n0 + COL(j);
            if (n >= N) continue;
            const int idx = ybase + m * N + n;
            float v = acc[i][j];
#if HAS_BIAS
            v += LOAD_BI(bias, n);
#endif
#if HAS_RES
            v += LOAD_R(res, idx);
#endif
            STORE_Y(y, idx, ACTIVATE(v));
        }
    }
}
#endif

#ifdef CONV_DIRECT
// One work-item per output: the right shape for depthwise convolution (memory bound, tiny K).
// w keeps the model layout [G*CoutG][CinG][KH][KW]. P: total C H W OH OW CoutG CinG Cout p0 p1
__kernel void conv_direct(__global const X_T* x, __global const W_T* w, __global const BI_T* bias,
                          __global const R_T* res, __global Y_T* y, __global const int* P) {
    const int i = get_global_id(0);
    if (i >= P[0]) return;
    const int C = P[1], H = P[2], W = P[3], OH = P[4], OW = P[5];
    const int CoutG = P[6], CinG = P[7], Cout = P[8];
    const float p0 = as_float(P[9]), p1 = as_float(P[10]);
    __global const int* G = P + 11;
    const int ow = i % OW;
    const int oh = (i / OW) % OH;
    const int co = (i / (OW * OH)) % Cout;
    const int b = i / (OW * OH * Cout);
    const int g = co / CoutG;
    float acc = 0.0f;
    for (int ci = 0; ci < CinG; ++ci) {
        const int xb = ((b * C + g * CinG + ci) * H) * W;
        const int wb = ((co * CinG + ci) * KH) * KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                acc = mad((float)LOAD_X(x, xb + ih * W + iw), (float)LOAD_W(w, wb + kh * KW + kw), acc);
            }
        }
    }
#if HAS_BIAS
    acc += LOAD_BI(bias, co);
#endif
#if HAS_RES
    acc += LOAD_R(res, i);
#endif
    STORE_Y(y, i, ACTIVATE(acc));
}
#endif

#ifdef MATMUL_NAIVE
// Integer MatMul: one work-item per output, exact ACC_T accumulation (wrapping like the
// reference). Same parameter block as matmul; gsize (N, M, batches).
__kernel void matmul_naive(__global const X_T* a, __global const W_T* bm, __global Y_T* y,
                           __global const int* P) {
    const int n = get_global_id(0), m = get_global_id(1), batch = get_global_id(2);
    const int M = P[0], N = P[1], K = P[2];
    if (n >= N || m >= M) return;
    const int a_sm = P[3], a_sk = P[4], b_sk = P[5], b_sn = P[6];
    const int a_off = P[9 + 2 * batch], b_off = P[10 + 2 * batch];
    ACC_T acc = 0;
    for (int k = 0; k < K; ++k)
        acc += (ACC_T)LOAD_X(a, a_off + m * a_sm + k * a_sk) * (ACC_T)LOAD_W(bm, b_off + k * b_sk + n * b_sn);
    STORE_Y(y, (batch * M + m) * N + n, acc);
}
#endif
