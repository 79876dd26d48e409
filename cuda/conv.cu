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
 * Offsets are 64-bit; a plane's size (OH * OW, H * W) and K = C * KH * KW are
 * 32-bit (the loader checks).  Loops stride over both grid axes, so any grid
 * size is correct.
 */

/* Launch geometry (loader._plane_launch): threadIdx.x / blockIdx.x stride over
 * the positions of one plane, threadIdx.y / blockIdx.y over the planes, so the
 * 64-bit index arithmetic happens once per plane and thread, and a position
 * costs one 32-bit division. */

template <typename T>
__device__ void im2col_impl(const T *__restrict__ x, T *__restrict__ cols,
                            int N, int C_total, int c0, int C, int H, int W,
                            int KH, int KW, int SH, int SW, int PH, int PW,
                            int DH, int DW, int OH, int OW, int KNL) {
    /* a plane is one row of cols: (k, n) in the knl layout, (n, k) in nkl */
    const int L = OH * OW, K = C * KH * KW;
    const long long rows = (long long)N * K;
    const long long row_step = (long long)gridDim.y * blockDim.y;
    const int step = blockDim.x * gridDim.x;
    for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
         r += row_step) {
        int k;
        long long n;
        if (KNL) {
            k = (int)(r / N);
            n = r - (long long)k * N;
        } else {
            n = r / K;
            k = (int)(r - n * K);
        }
        const int kw = k % KW, kh = (k / KW) % KH, c = k / (KW * KH);
        const T *__restrict__ src = x + (n * C_total + c0 + c) * (long long)H * W;
        T *__restrict__ dst = cols + r * L;
        const int dh = kh * DH - PH, dw = kw * DW - PW;
        for (int l = blockIdx.x * blockDim.x + threadIdx.x; l < L; l += step) {
            const int oh = l / OW, ow = l - oh * OW;
            const int h = oh * SH + dh, w = ow * SW + dw;
            dst[l] = (h >= 0 && h < H && w >= 0 && w < W) ? src[(long long)h * W + w] : (T)0;
        }
    }
}

template <typename T>
__device__ void col2im_impl(const T *__restrict__ cols, T *__restrict__ x,
                            int N, int C_total, int c0, int C, int H, int W,
                            int KH, int KW, int SH, int SW, int PH, int PW,
                            int DH, int DW, int OH, int OW, int KNL) {
    /* a plane is one channel of one sample; a position one of its pixels */
    const int L = OH * OW, K = C * KH * KW, P = H * W;
    const long long planes = (long long)N * C;
    const long long plane_step = (long long)gridDim.y * blockDim.y;
    const int step = blockDim.x * gridDim.x;
    for (long long pl = (long long)blockIdx.y * blockDim.y + threadIdx.y; pl < planes;
         pl += plane_step) {
        const long long n = pl / C;
        const int c = (int)(pl - n * C);
        T *__restrict__ dst = x + (n * C_total + c0 + c) * (long long)P;
        for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < P; p += step) {
            const int h = p / W, w = p - h * W;
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
                    const int k = (c * KH + kh) * KW + kw;
                    const long long row = KNL ? (long long)k * N + n : n * K + k;
                    acc += cols[row * L + oh * OW + ow];
                }
            }
            dst[p] = acc;
        }
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
