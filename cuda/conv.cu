/*
 * conv.cu -- im2col and col2im for 2-D convolution (NCHW), float32/float64.
 *
 * Layouts (all C-contiguous):
 *   x     (N, C_total, H, W); the kernels touch channels [c0, c0 + C) only,
 *         so grouped convolution calls them once per group with c0 = g * C.
 *   cols  (N, C * KH * KW, OH * OW) when KNL == 0, or (C * KH * KW, N, OH * OW)
 *         when KNL == 1 (one GEMM for the whole batch, no transposing copy); row
 *         k = (c * KH + kh) * KW + kw matches weight.reshape(F, C * KH * KW), so
 *         conv = weight2d @ cols.
 * A 1-D convolution is the 2-D one with H = KH = 1.
 *
 * col2im runs one thread per input pixel, which sums every column entry that
 * reads that pixel in a fixed order: no atomics, so results are deterministic.
 * Indices are 64-bit; loops are grid-stride so any grid size is correct.
 */

template <typename T>
__device__ void im2col_impl(const T *__restrict__ x, T *__restrict__ cols,
                            int N, int C_total, int c0, int C, int H, int W,
                            int KH, int KW, int SH, int SW, int PH, int PW,
                            int DH, int DW, int OH, int OW, int KNL) {
    const long long L = (long long)OH * OW;
    const long long K = (long long)C * KH * KW;
    const long long total = (long long)N * K * L;
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += step) {
        const long long l = i % L;
        const long long r = i / L;
        const int k = (int)(KNL ? r / N : r % K);
        const long long n = KNL ? r % N : r / K;
        const int ow = (int)(l % OW), oh = (int)(l / OW);
        const int kw = k % KW, kh = (k / KW) % KH, c = k / (KW * KH);
        const int h = oh * SH - PH + kh * DH;
        const int w = ow * SW - PW + kw * DW;
        T v = (T)0;
        if (h >= 0 && h < H && w >= 0 && w < W)
            v = x[((n * C_total + c0 + c) * H + h) * (long long)W + w];
        cols[i] = v;
    }
}

template <typename T>
__device__ void col2im_impl(const T *__restrict__ cols, T *__restrict__ x,
                            int N, int C_total, int c0, int C, int H, int W,
                            int KH, int KW, int SH, int SW, int PH, int PW,
                            int DH, int DW, int OH, int OW, int KNL) {
    const long long L = (long long)OH * OW;
    const long long K = (long long)C * KH * KW;
    const long long total = (long long)N * C * H * W;
    const long long step = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += step) {
        const int w = (int)(i % W);
        const int h = (int)((i / W) % H);
        const int c = (int)((i / ((long long)W * H)) % C);
        const long long n = i / ((long long)W * H * C);
        T acc = (T)0;
        for (int kh = 0; kh < KH; ++kh) {
            /* output row oh reads row h through tap kh iff oh*SH = h + PH - kh*DH */
            const int hp = h + PH - kh * DH;
            if (hp < 0 || hp % SH != 0) continue;
            const int oh = hp / SH;
            if (oh >= OH) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int wp = w + PW - kw * DW;
                if (wp < 0 || wp % SW != 0) continue;
                const int ow = wp / SW;
                if (ow >= OW) continue;
                const long long k = ((long long)c * KH + kh) * KW + kw;
                const long long row = KNL ? k * N + n : n * K + k;
                acc += cols[row * L + (long long)oh * OW + ow];
            }
        }
        x[((n * C_total + c0 + c) * H + h) * (long long)W + w] = acc;
    }
}

#define SG_CONV_ARGS                                                              \
    int N, int C_total, int c0, int C, int H, int W, int KH, int KW, int SH, int SW, \
        int PH, int PW, int DH, int DW, int OH, int OW, int KNL
#define SG_CONV_PASS N, C_total, c0, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, KNL

extern "C" __global__ void im2col_f32(const float *__restrict__ x, float *__restrict__ cols,
                                      SG_CONV_ARGS) {
    im2col_impl<float>(x, cols, SG_CONV_PASS);
}

extern "C" __global__ void im2col_f64(const double *__restrict__ x, double *__restrict__ cols,
                                      SG_CONV_ARGS) {
    im2col_impl<double>(x, cols, SG_CONV_PASS);
}

extern "C" __global__ void col2im_f32(const float *__restrict__ cols, float *__restrict__ x,
                                      SG_CONV_ARGS) {
    col2im_impl<float>(cols, x, SG_CONV_PASS);
}

extern "C" __global__ void col2im_f64(const double *__restrict__ cols, double *__restrict__ x,
                                      SG_CONV_ARGS) {
    col2im_impl<double>(cols, x, SG_CONV_PASS);
}
